//go:build unix

package ledger

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestReloadCheckoutSteps: git checkout, pull and stash pop replace
// config.json in steps: unlink, create (empty), write. A request landing
// between them keeps the settings and says nothing; the file is taken once
// written. A file that stays gone or empty after the change settled is
// said, as before.
func TestReloadCheckoutSteps(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.dir, ConfigFile)
	os.WriteFile(path, []byte(`{"version":1,"review":{"required":true}}`), 0o644)
	b, err := e.open().Reload()
	if err != nil || !b.Config().Review.Required {
		t.Fatalf("start: %+v %v", b.Config(), err)
	}
	step := func(what string) {
		t.Helper()
		nb, err := b.Reload()
		if err != nil || nb != b {
			t.Fatalf("%s: %v (the settings kept: %v), want nothing said and the settings kept", what, err, nb == b)
		}
	}
	os.Remove(path)
	step("config.json unlinked by a checkout")
	os.WriteFile(path, nil, 0o644)
	step("config.json created, not yet written")
	os.WriteFile(path, []byte(`{"version":1,"review":{"required":true},"compact_bytes":5000}`), 0o644)
	nb, err := b.Reload()
	if err != nil || nb.CompactThreshold() != 5000 || !nb.Config().Review.Required {
		t.Fatalf("written: %+v %v", nb.Config(), err)
	}
	b = nb

	// Settled: an empty file, or none, is said once.
	old := time.Now().Add(-time.Hour)
	os.WriteFile(path, nil, 0o644)
	os.Chtimes(path, old, old)
	if nb, err := b.Reload(); nb != b || err == nil || !strings.Contains(err.Error(), "unexpected end") {
		t.Fatalf("empty, settled: %v", err)
	}
	os.Remove(path)
	os.Chtimes(e.dir, old, old)
	if nb, err := b.Reload(); nb != b || err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("gone, settled: %v", err)
	}
}

// TestReloadFileAppearsMidLook: config.json missing at the stat and back
// by the read (a checkout between the two) is never taken as a file of
// defaults: the look keeps the settings, and the next takes the file.
func TestReloadFileAppearsMidLook(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ConfigFile)
	want := []byte(`{"version":1,"id":"0123456789abcdef","review":{"required":true}}`)
	os.WriteFile(path, want, 0o644)
	armed, reached := false, false
	b, err := Open(dir, Options{Failpoint: func(stage string) {
		if stage == "reload-stat" && armed {
			armed, reached = false, true
			os.WriteFile(path, want, 0o644)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if b, err = b.Reload(); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	armed = true
	nb, err := b.Reload()
	if !reached {
		t.Fatal("the look made no stat of config.json")
	}
	if c := nb.Config(); !c.Review.Required || c.ID != "0123456789abcdef" {
		t.Fatalf("a file missing at the stat and back by the read: settings %+v (err %v), want the file's", c, err)
	}
	if nb, err = nb.Reload(); err != nil || !nb.Config().Review.Required {
		t.Fatalf("next look: %+v %v", nb.Config(), err)
	}
}

// TestReloadSameStamp: an edit in place that keeps the size, with the
// modification time put back afterwards (touch -d, cp -p), long after the
// last read, is seen: the ctime changed.
func TestReloadSameStamp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change time is read on Linux")
	}
	e := newEnv(t)
	path := filepath.Join(e.dir, ConfigFile)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.WriteFile(path, []byte(`{"version":1,"compact_bytes":100000}`), 0o644)
	os.Chtimes(path, old, old)
	b, err := e.open().Reload()
	if err != nil || b.CompactThreshold() != 100000 {
		t.Fatalf("start: %d %v", b.CompactThreshold(), err)
	}
	time.Sleep(10 * time.Millisecond) // a ctime of its own
	os.WriteFile(path, []byte(`{"version":1,"compact_bytes":200000}`), 0o644)
	os.Chtimes(path, old, old)
	if nb, err := b.Reload(); err != nil || nb.CompactThreshold() != 200000 {
		t.Fatalf("same inode, size and mtime, new content: threshold %d %v", nb.CompactThreshold(), err)
	}
}

// TestReloadGitCheckout (BL_STRESS=1): real git checkouts between two
// branches whose config.json differ, with a look after another: every
// look gives one branch's settings or the ones before, and nothing is
// said.
func TestReloadGitCheckout(t *testing.T) {
	if os.Getenv("BL_STRESS") == "" {
		t.Skip("BL_STRESS=1 runs real git checkouts")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	dir := filepath.Join(repo, ".backlog")
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ConfigFile)
	os.WriteFile(path, []byte(`{"version":1,"id":"0123456789abcdef","review":{"required":true}}`+"\n"), 0o644)
	git("add", "-A")
	git("commit", "-qm", "a")
	git("checkout", "-qb", "b")
	os.WriteFile(path, []byte(`{"version":1,"id":"0123456789abcdef","review":{"required":true},"compact_bytes":5000}`+"\n"), 0o644)
	git("commit", "-qam", "b")
	git("checkout", "-q", "main")
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		cur, looks := b, 0
		for {
			select {
			case <-stop:
				t.Logf("%d looks", looks)
				done <- nil
				return
			default:
			}
			looks++
			nb, err := cur.Reload()
			if c := nb.Config(); err != nil || !c.Review.Required || c.ID != "0123456789abcdef" {
				done <- fmt.Errorf("look %d during checkouts: settings %+v, error %v", looks, c, err)
				return
			}
			cur = nb
		}
	}()
	for range 300 {
		git("checkout", "-q", "b")
		git("checkout", "-q", "main")
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
