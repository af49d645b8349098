package ledger

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkFirstReadOfSnapshotFromGit measures the first read of a
// 100k-card snapshot that git wrote (a fresh clone, or a pull that brings
// a compaction): "vetted" is a read with the snapshot's index missing
// only (the snapshot checked before), "unvetted" one that also holds the
// snapshot to its events first (vetSnapshot); "no git" is the same read
// outside a git repository, the cost before git's index was consulted.
func BenchmarkFirstReadOfSnapshotFromGit(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not found")
	}
	root := b.TempDir()
	dir := filepath.Join(root, ".backlog")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	writeHistory(b, dir, 100_000, 300_000)
	git("add", "-A")
	for _, c := range []struct {
		name string
		drop []string
	}{
		{"no git", []string{"snapshot.idx"}},
		{"vetted", []string{"snapshot.idx"}},
		{"unvetted", []string{"snapshot.idx", "snapshot.vetted"}},
	} {
		if c.name == "no git" {
			if err := os.Rename(filepath.Join(root, ".git"), filepath.Join(root, "git.off")); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, f := range c.drop {
					_ = os.Remove(filepath.Join(dir, CacheDir, f))
				}
				b.StartTimer()
				bl, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := bl.List(Filter{}, ""); err != nil {
					b.Fatal(err)
				}
				bl.Close()
			}
		})
		if c.name == "no git" {
			if err := os.Rename(filepath.Join(root, "git.off"), filepath.Join(root, ".git")); err != nil {
				b.Fatal(err)
			}
		}
	}
}
