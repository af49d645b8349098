//go:build unix

package gitsync

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A teammate can commit .gitattributes as a symbolic link (git pushes
// links): to /dev/stdin or /dev/tty, bl sync read the agent's pipe or the
// terminal and no first SIGTERM ended it. git ignores a linked in-tree
// .gitattributes; bl does the same, and reads no attributes file that is
// not regular (info/attributes as a FIFO), never waiting on one. A FIFO
// stands in for the pipe: nobody writes it.
func TestAttributesNeverBlock(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, tc := range []struct{ name, link, fifo string }{
		{"linked .gitattributes", ".gitattributes", ""},
		{"info/attributes FIFO", "", ".git/info/attributes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v\n%s", err, out)
			}
			fifo := filepath.Join(t.TempDir(), "pipe")
			if tc.fifo != "" {
				fifo = filepath.Join(dir, filepath.FromSlash(tc.fifo))
				os.MkdirAll(filepath.Dir(fifo), 0o755)
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.link != "" {
				if err := os.Symlink(fifo, filepath.Join(dir, tc.link)); err != nil {
					t.Fatal(err)
				}
			}
			g, err := OpenRepo(dir)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan bool, 1)
			go func() { done <- g.eolText("config.json") }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang bound, not a speed assertion
			defer cancel()
			select {
			case <-done:
			case <-ctx.Done():
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close() // let the blocked read end
				}
				t.Fatalf("reading the attributes blocked on %s", fifo)
			}
		})
	}
}

// A linked in-tree .gitattributes is ignored, as git ignores it; a
// regular one is read.
func TestLinkedAttributesIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, linked := range []bool{false, true} {
		dir := t.TempDir()
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		attrs := filepath.Join(dir, ".gitattributes")
		if linked {
			other := filepath.Join(t.TempDir(), "attrs")
			os.WriteFile(other, []byte("*.json text\n"), 0o644)
			os.Symlink(other, attrs)
		} else {
			os.WriteFile(attrs, []byte("*.json text\n"), 0o644)
		}
		g, err := OpenRepo(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.eolText("config.json"); got != !linked {
			t.Errorf("linked %v: eolText = %v, want %v", linked, got, !linked)
		}
	}
}
