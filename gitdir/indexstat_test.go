package gitdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestIndexBlobID: git's index gives a file's blob id without reading the
// file only while the file's stat is the one git recorded and the entry
// is not racily clean; a rewrite of the same size with the old mtime put
// back (the ctime moves), a racy entry, an assume-unchanged or
// skip-worktree entry and a split index all say "hash it".
func TestIndexBlobID(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	if runtime.GOOS != "linux" {
		t.Skip("stat data compared on Linux only")
	}
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			repo := t.TempDir()
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = repo
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
					"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			git("init", "-q", "--object-format="+format)
			file := filepath.Join(repo, "d", "s.json")
			past := time.Now().Add(-time.Hour)
			write := func(body string, mtime time.Time) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(file, mtime, mtime); err != nil {
					t.Fatal(err)
				}
			}
			// git looks again only when a second-precision field moved:
			// restage records the stat as it is now.
			restage := func() { git("rm", "-q", "--cached", "d/s.json"); git("add", "d/s.json") }
			write("{\"a\":1}\n", past)
			git("add", ".")
			git("commit", "-q", "-m", "one")
			want := git("rev-parse", "HEAD:d/s.json")
			id, fi, ok := IndexBlobID(repo, "d/s.json")
			if !ok || id != want || fi.Size() != 8 {
				t.Fatalf("IndexBlobID = %q, %v; want %q", id, ok, want)
			}
			if _, _, ok := IndexBlobID(repo, "d/none.json"); ok {
				t.Error("a file the index does not hold has an id")
			}

			// Same size, same mtime, other bytes: the ctime tells.
			write("{\"a\":2}\n", past)
			if _, _, ok := IndexBlobID(repo, "d/s.json"); ok {
				t.Error("a rewritten file took the index's id")
			}
			write("{\"a\":1}\n", past)
			restage()
			if id, _, ok := IndexBlobID(repo, "d/s.json"); !ok || id != want {
				t.Fatal("refreshed entry not taken")
			}

			// Racily clean: the file's mtime is not older than the index.
			write("{\"a\":1}\n", time.Now().Add(time.Hour))
			restage()
			if _, _, ok := IndexBlobID(repo, "d/s.json"); ok {
				t.Error("a racily clean entry was taken")
			}
			write("{\"a\":1}\n", past)
			restage()

			for _, flag := range []string{"--assume-unchanged", "--skip-worktree"} {
				git("update-index", flag, "d/s.json")
				if _, _, ok := IndexBlobID(repo, "d/s.json"); ok {
					t.Errorf("%s entry was taken", flag)
				}
				git("update-index", "--no"+flag[1:], "d/s.json")
			}
			if _, _, ok := IndexBlobID(repo, "d/s.json"); !ok {
				t.Fatal("entry not taken after the flags were cleared")
			}
			git("update-index", "--split-index")
			if _, _, ok := IndexBlobID(repo, "d/s.json"); ok {
				t.Error("a split index was read for stat data")
			}
		})
	}
}
