//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A tracked file of the backlog that a teammate committed as a link out
// of it (git pushes links) is refused by ReadTree, bl sync's and bl diff's
// read of the backlog, as Open refuses a linked .gitignore: followed,
// .gitattributes -> /dev/stdin held bl sync on the agent's pipe past
// SIGTERM (a FIFO stands in for the pipe here), and board.md -> a file of
// the user's read that file as the backlog's. A link inside the backlog
// is still read.
func TestReadTreeRefusesLinksOut(t *testing.T) {
	outside := t.TempDir()
	fifo := filepath.Join(outside, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("key\n"), 0o600)
	for _, tc := range []struct{ name, target string }{
		{AttributesFile, fifo},
		{"board.md", secret},
		{"board.md", ConfigFile}, // inside: read
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte("{}\n"), 0o644)
		if err := os.Symlink(tc.target, filepath.Join(dir, tc.name)); err != nil {
			t.Fatal(err)
		}
		type result struct {
			t   Tree
			err error
		}
		done := make(chan result, 1)
		go func() { tr, err := ReadTree(dir); done <- result{tr, err} }()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang bound, not a speed assertion
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close() // let the blocked read end
			}
			cancel()
			t.Fatalf("%s -> %s: ReadTree blocked", tc.name, tc.target)
		}
		cancel()
		var le *LinkError
		inside := !filepath.IsAbs(tc.target)
		switch {
		case inside && (r.err != nil || string(r.t[tc.name]) != "{}\n"):
			t.Errorf("%s -> %s: %q, %v; want the file it links to", tc.name, tc.target, r.t[tc.name], r.err)
		case !inside && !errors.As(r.err, &le):
			t.Errorf("%s -> %s: %q, %v; want a *LinkError", tc.name, tc.target, r.t[tc.name], r.err)
		}
	}
}

// An archive segment committed as a link out of the backlog
// (-> /dev/stdin) held every command that reads the archive (bl list,
// create, ready on SIGTERM; sync, doctor, diff, compact only on SIGKILL):
// the archive's names refuse it, as Open refuses a linked ledger. A link
// inside the backlog is still a segment.
func TestArchiveRefusesLinksOut(t *testing.T) {
	for _, tc := range []struct {
		target string
		out    bool
	}{{"/dev/stdin", true}, {filepath.Join(t.TempDir(), "seg.jsonl"), true}, {"../" + LedgerFile, false}} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, LedgerFile), nil, 0o644)
		os.Mkdir(filepath.Join(dir, ArchiveDir), 0o755)
		if err := os.Symlink(tc.target, filepath.Join(dir, ArchiveDir, "000000000001.jsonl")); err != nil {
			t.Fatal(err)
		}
		segs, err := Segments(dir)
		var le *LinkError
		if tc.out != errors.As(err, &le) {
			t.Errorf("archive/000000000001.jsonl -> %s: %v, %v; want a *LinkError: %v", tc.target, segs, err, tc.out)
		}
	}
}
