//go:build unix

package ledger

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRenamedRecordNeverWaits: the record of renamed cards is read by every
// owner's heartbeat and complete. A FIFO at its path (or a link to one,
// which git can commit) must not hold them: it reads as no record.
func TestRenamedRecordNeverWaits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".backlog")
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	path := filepath.Join(dir, filepath.FromSlash(renamedFile))
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan []string, 1)
	go func() { done <- b.renamedLines() }()
	select {
	case lines := <-done:
		if len(lines) != 0 {
			t.Fatalf("a FIFO read as %q", lines)
		}
	case <-time.After(time.Minute): // a hang guard: the read never waits
		t.Fatal("reading the renamed record waited on a FIFO")
	}
}
