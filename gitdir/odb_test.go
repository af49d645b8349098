package gitdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// storeRepo builds a repository with history worth packing: files that
// change a little each commit (deltas), a merge, an annotated tag.
func storeRepo(t testing.TB, format string) (repo string, git func(dir string, args ...string) string) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo = t.TempDir()
	git = func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git(repo, "init", "-q", "-b", "main", "--object-format="+format)
	var ledger bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&ledger, "{\"id\":%d,\"title\":\"card number %d with some words to delta\"}\n", i, i)
		if err := os.MkdirAll(filepath.Join(repo, ".backlog", "archive"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(repo, ".backlog", "ledger.jsonl"), ledger.Bytes(), 0o644)
		os.WriteFile(filepath.Join(repo, ".backlog", "archive", "seg.jsonl"), bytes.Repeat([]byte(strconv.Itoa(i/10)+" segment line\n"), 500), 0o644)
		git(repo, "add", "-A")
		git(repo, "commit", "-q", "-m", "c"+strconv.Itoa(i))
		if i == 20 {
			git(repo, "tag", "-a", "-m", "tagged", "v1")
			git(repo, "checkout", "-q", "-b", "side")
			os.WriteFile(filepath.Join(repo, "side.txt"), []byte("side\n"), 0o644)
			git(repo, "add", "-A")
			git(repo, "commit", "-q", "-m", "side")
			git(repo, "checkout", "-q", "main")
			git(repo, "merge", "-q", "--no-ff", "-m", "merge", "side")
		}
	}
	return repo, git
}

// allObjects is every object of the repository at repo as git cat-file
// prints it, by id.
func allObjects(t testing.TB, repo string) map[string][2]string {
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string][2]string{}
	r := bufio.NewReader(bytes.NewReader(out))
	for {
		h, err := r.ReadString('\n')
		if err == io.EOF {
			break
		}
		f := strings.Fields(h)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatal(err)
		}
		objs[f[0]] = [2]string{f[1], string(data[:n])}
	}
	return objs
}

// TestStoreMatchesGit: every object the in-process store reads equals
// git cat-file's, byte for byte, with the objects loose, after git gc,
// git repack -a -d --depth=50, a fetch that keeps a thin pack, and git gc
// --aggressive, for both object formats; revisions resolve as git
// rev-parse resolves them.
func TestStoreMatchesGit(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			repo, git := storeRepo(t, format)
			clone := t.TempDir()
			git(clone, "init", "-q", "-b", "main", "--object-format="+format)
			git(clone, "config", "fetch.unpackLimit", "1")
			git(clone, "config", "transfer.unpackLimit", "1")
			git(clone, "fetch", "-q", repo, "v1")
			stages := []struct {
				name string
				dir  string
				do   func()
			}{
				{"loose", repo, func() {}},
				{"gc", repo, func() { git(repo, "gc", "-q") }},
				{"repack depth 50", repo, func() { git(repo, "repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=50") }},
				{"thin fetch", clone, func() { git(clone, "fetch", "-q", repo, "main:refs/remotes/o/main", "side:refs/remotes/o/side") }},
				{"gc aggressive", repo, func() { git(repo, "gc", "-q", "--aggressive") }},
			}
			for _, st := range stages {
				st.do()
				gitDir, commonDir, err := Dirs(st.dir)
				if err != nil {
					t.Fatal(err)
				}
				s, err := OpenStore(commonDir)
				if err != nil {
					t.Fatal(err)
				}
				if st.name != "loose" {
					// Deltas of both kinds must be there to be read.
					idx, _ := filepath.Glob(filepath.Join(commonDir, "objects", "pack", "*.idx"))
					deltas := 0
					for _, f := range idx {
						for _, l := range strings.Split(git(st.dir, "verify-pack", "-v", f), "\n") {
							if len(strings.Fields(l)) == 7 {
								deltas++
							}
						}
					}
					if deltas == 0 {
						t.Fatalf("%s: no deltas in the packs", st.name)
					}
				}
				want := allObjects(t, st.dir)
				if len(want) < 100 {
					t.Fatalf("%s: only %d objects", st.name, len(want))
				}
				for id, w := range want {
					typ, data, err := s.Read(id)
					if err != nil || typ != w[0] || string(data) != w[1] {
						t.Fatalf("%s: Read(%s) = %s, %d bytes, %v; git: %s, %d bytes", st.name, id, typ, len(data), err, w[0], len(w[1]))
					}
					if size, err := s.Size(id); err != nil || size != int64(len(w[1])) {
						t.Fatalf("%s: Size(%s) = %d, %v; want %d", st.name, id, size, err, len(w[1]))
					}
				}
				revs := []string{"HEAD", "HEAD~1", "HEAD~3", "HEAD^", "HEAD~19^2", "HEAD~19^1~2", "main", "main~5", "refs/heads/main", "v1", "v1~2", "side", "HEAD^0"}
				if st.dir == clone {
					revs = []string{"o/main", "o/main~3", "o/side", "refs/remotes/o/side^"}
				}
				for _, rev := range revs {
					want := strings.TrimSpace(git(st.dir, "rev-parse", rev+"^{commit}"))
					got, err := s.Commit(gitDir, commonDir, rev)
					if err != nil || got != want {
						t.Errorf("%s: Commit(%s) = %s, %v; want %s", st.name, rev, got, err, want)
					}
				}
				for _, rev := range []string{"HEAD@{1}", "HEAD:f", "abc1", ":/c1", "ORIG_HEAD", "-x", "no-such-ref", "HEAD~99", "config", "objects", "refs/heads/../../HEAD"} {
					if got, err := s.Commit(gitDir, commonDir, rev); err == nil {
						t.Errorf("%s: Commit(%s) = %s, want ErrUnsure", st.name, rev, got)
					}
				}
				s.Close()
			}
		})
	}
}

// TestStoreUnsure: alternates, grafts and replace refs make the store
// step aside; a loose object whose bytes are another object's does not
// read (its hash tells), nor does an id the store does not hold.
func TestStoreUnsure(t *testing.T) {
	repo, git := storeRepo(t, "sha1")
	_, commonDir, err := Dirs(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"objects/info/alternates", "info/grafts", "refs/replace/" + strings.Repeat("a", 40)} {
		full := filepath.Join(commonDir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenStore(commonDir); err != ErrUnsure {
			t.Errorf("with %s: OpenStore = %v, want ErrUnsure", p, err)
		}
		os.Remove(full)
	}
	s, err := OpenStore(commonDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := strings.TrimSpace(git(repo, "rev-parse", "HEAD:.backlog/ledger.jsonl"))
	b := strings.TrimSpace(git(repo, "rev-parse", "HEAD~1:.backlog/ledger.jsonl"))
	raw, err := os.ReadFile(filepath.Join(commonDir, "objects", a[:2], a[2:]))
	if err != nil {
		t.Fatal(err)
	}
	bPath := filepath.Join(commonDir, "objects", b[:2], b[2:])
	os.Chmod(bPath, 0o644)
	if err := os.WriteFile(bPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Read(b); !errors.Is(err, ErrUnsure) {
		t.Errorf("a loose object holding another's bytes: %v, want ErrUnsure", err)
	}
	if _, _, err := s.Read(strings.Repeat("0", 40)); !errors.Is(err, ErrUnsure) {
		t.Errorf("a missing object: %v, want ErrUnsure", err)
	}
}

// TestStoreReadAllocates: reading a small object allocates about its
// bytes, loose or packed, not a zlib reader's tables and 32 KB window each
// time (bl diff reads a handful of objects per call).
func TestStoreReadAllocates(t *testing.T) {
	repo, git := smallRepo(t)
	id := git("rev-parse", "HEAD:f.txt")
	for _, packed := range []bool{false, true} {
		if packed {
			git("gc", "-q", "--prune=now")
		}
		s, err := OpenStore(filepath.Join(repo, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		read := func() {
			if typ, data, err := s.Read(id); err != nil || typ != "blob" || string(data) != "a small object\n" {
				t.Fatalf("packed %v: %s %q %v", packed, typ, data, err)
			}
		}
		read()
		const n = 50
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			read()
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
			t.Errorf("packed %v: a read of a 15-byte object allocates %d bytes", packed, per)
		}
		s.Close()
	}
}

// smallRepo is a repository of one commit holding f.txt, "a small
// object\n", and git run in it (its output trimmed).
func smallRepo(t *testing.T) (string, func(args ...string) string) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "f.txt"), []byte("a small object\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "one")
	return repo, git
}

// TestStoreReadsCommitsOnce: resolving HEAD~1 and HEAD and reading both
// commits reads each commit's object once; a caller that changes the bytes
// it got does not change the next read's.
func TestStoreReadsCommitsOnce(t *testing.T) {
	repo, git := smallRepo(t)
	git("commit", "-q", "--allow-empty", "-m", "two")
	s, err := OpenStore(filepath.Join(repo, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gitDir := filepath.Join(repo, ".git")
	for _, rev := range []string{"HEAD~1", "HEAD"} {
		id, err := s.Commit(gitDir, gitDir, rev)
		if err != nil || id != git("rev-parse", rev) {
			t.Fatalf("%s: %s, %v", rev, id, err)
		}
		typ, data, err := s.Read(id)
		if err != nil || typ != "commit" || string(data) != git("cat-file", "commit", id)+"\n" {
			t.Fatalf("%s: %s %q %v", rev, typ, data, err)
		}
	}
	if s.reads != 2 {
		t.Errorf("two commits resolved and read: %d objects read", s.reads)
	}
	id := git("rev-parse", "HEAD~1")
	_, mine, _ := s.Read(id)
	want := string(mine)
	mine[0] = 'X'
	if _, data, err := s.Read(id); err != nil || string(data) != want {
		t.Errorf("after the caller changed its copy: %q, %v", data, err)
	}
}

// TestStoreSizeOfBigLooseBlob: the size of a big loose blob, compressible
// or not, is read from its header (the first KB of the file).
func TestStoreSizeOfBigLooseBlob(t *testing.T) {
	repo, git := smallRepo(t)
	random := make([]byte, 2<<20)
	for i := range random {
		random[i] = byte(i*7919 + i>>3*31 + i>>11)
	}
	text := bytes.Repeat([]byte(`{"id":"0123","title":"a card of the backlog"}`+"\n"), 40_000)
	for name, data := range map[string][]byte{"random": random, "text": text} {
		if err := os.WriteFile(filepath.Join(repo, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		id := git("hash-object", "-w", name)
		s, err := OpenStore(filepath.Join(repo, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		if size, err := s.Size(id); err != nil || size != int64(len(data)) {
			t.Errorf("%s: size %d, %v; want %d", name, size, err, len(data))
		}
		s.Close()
	}
}
