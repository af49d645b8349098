//go:build unix

package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReloadConfig: Reload takes a config.json replaced by rename or
// edited in place (even with its size and modification time unchanged),
// keeps the handle it returned before as it was, and keeps the last good
// settings, saying so once, for a file that fails the checks Open makes.
func TestReloadConfig(t *testing.T) {
	e := newEnv(t)
	b := e.open()
	path := filepath.Join(e.dir, ConfigFile)
	reload := func(b *Backlog) (*Backlog, error) {
		t.Helper()
		nb, err := b.Reload()
		if nb == nil {
			t.Fatal("Reload returned no handle")
		}
		return nb, err
	}
	if nb, err := reload(b); nb != b || err != nil {
		t.Fatalf("unchanged file: %p %v, want the same handle", nb, err)
	}

	// Replaced by rename, as git pull and bl sync write it.
	tmp := path + ".new"
	os.WriteFile(tmp, []byte(`{"version":1,"review":{"required":true},"compact_bytes":100000}`), 0o644)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	nb, err := reload(b)
	if err != nil || nb == b || !nb.Config().Review.Required {
		t.Fatalf("renamed file: %+v %v", nb.Config(), err)
	}
	if b.Config().Review.Required {
		t.Fatal("the handle of a request under way changed its settings")
	}
	if got := nb.CompactThreshold(); got != 100000 {
		t.Fatalf("compact threshold %d after reload", got)
	}
	b = nb

	// Edited in place to the same size, the stamp put back: only the
	// read of a file modified just now sees it.
	fi, _ := os.Stat(path)
	if err := os.WriteFile(path, []byte(`{"version":1,"review":{"required":true},"compact_bytes":200000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, fi.ModTime(), fi.ModTime())
	if nb, _ = reload(b); nb.CompactThreshold() != 200000 {
		t.Fatalf("in-place edit of the same size not taken: %+v", nb.Config())
	}
	b = nb

	good, _ := os.ReadFile(path)
	bad := map[string]func() string{
		"garbage": func() string {
			os.WriteFile(path, []byte("{\"version\":1,\x00garbage"), 0o644)
			return path
		},
		"a setting twice": func() string {
			os.WriteFile(path, []byte(`{"version":1,"review":{"required":false,"required":true}}`), 0o644)
			return "twice"
		},
		"huge": func() string {
			os.WriteFile(path, append([]byte(`{"version":1}`), make([]byte, MaxConfigBytes)...), 0o644)
			return "more than bl reads"
		},
		"FIFO": func() string {
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
			return "FIFO"
		},
		"link out": func() string {
			out := filepath.Join(t.TempDir(), "config.json")
			os.WriteFile(out, []byte(`{"version":1}`), 0o644)
			os.Remove(path)
			os.Symlink(out, path)
			return "outside the backlog"
		},
		"gone": func() string {
			os.Remove(path)
			// Said once the removal is not one a checkout is in the
			// middle of (TestReloadCheckoutSteps).
			old := time.Now().Add(-time.Hour)
			os.Chtimes(e.dir, old, old)
			return "is gone"
		},
	}
	for name, spoil := range bad {
		t.Run(name, func(t *testing.T) {
			want := spoil()
			nb, err := reload(b)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one naming %q", err, want)
			}
			if nb != b {
				t.Fatal("the settings changed")
			}
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrCorrupt) {
				t.Errorf("error %v is neither invalid nor corrupt", err)
			}
			// Said once: the next requests run on quietly.
			if nb, err := reload(b); nb != b || err != nil {
				t.Fatalf("second look: %p %v", nb, err)
			}
			os.Remove(path)
			if err := os.WriteFile(path, good, 0o644); err != nil {
				t.Fatal(err)
			}
			if nb, err := reload(b); nb != b || err != nil {
				t.Fatalf("the good file back: %p %v", nb, err)
			}
		})
	}

	// A link to a file inside the backlog is read, as Open reads it.
	inside := filepath.Join(e.dir, "settings.json")
	os.WriteFile(inside, []byte(`{"version":1}`), 0o644)
	os.Remove(path)
	os.Symlink("settings.json", path)
	time.Sleep(time.Millisecond)
	nb, err = reload(b)
	if err != nil || nb.Config().Review.Required {
		t.Fatalf("link inside: %+v %v", nb.Config(), err)
	}
}

// TestReloadConcurrent: requests on the handles Reload returns run while
// the file changes and other requests reload (go test -race).
func TestReloadConcurrent(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.dir, ConfigFile)
	var cur atomic.Pointer[Backlog]
	cur.Store(e.open())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := path + ".new"
			os.WriteFile(tmp, []byte(fmt.Sprintf(`{"version":1,"review":{"required":%v}}`, i%2 == 0)), 0o644)
			os.Rename(tmp, path)
		}
	}()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				b, _ := cur.Load().Reload()
				cur.Store(b)
				started := b.Config().Review.Required
				id := fmt.Sprintf("W%dN%d", w, i)
				if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: id, Title: "t"}); err != nil {
					t.Error(err)
					return
				}
				owner := "o" + id
				if _, err := b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: owner, ID: id, TTL: time.Minute}); err != nil {
					t.Error(err)
					return
				}
				if _, err := b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: id, Owner: owner, Epoch: 1}); err != nil {
					t.Error(err)
					return
				}
				if b.Config().Review.Required != started {
					t.Errorf("%s: the settings changed under a request", id)
				}
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	close(stop)
	wg.Wait()
}

// BenchmarkReloadUnchanged is what a long-running process pays per
// request when config.json did not change: one or two stats.
func BenchmarkReloadUnchanged(b *testing.B) {
	e := newEnv(b)
	h := e.open()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(e.dir, ConfigFile), old, old)
	h, _ = h.Reload()
	for b.Loop() {
		if nb, err := h.Reload(); nb != h || err != nil {
			b.Fatal(nb, err)
		}
	}
}
