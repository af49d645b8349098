package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// TestReadDuringAppends: a reader without the lock reads the ledger over
// and over while a writer appends line after line, each in one write. A
// read can meet a line whose bytes are still landing, and see lines after
// it by the time it looks past it. Every read must end quietly before such a
// line, never call it damage, and the reads together see every line once.
func TestReadDuringAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), LedgerFile)
	var lines [][]byte
	for _, ev := range wire.BenchEvents(300) {
		l, err := wire.EncodeLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const appends = 50000
	done := make(chan error, 1)
	go func() {
		for i := range appends {
			if _, err := f.Write(lines[i%len(lines)]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// As a follower does: each read goes on from where the last ended.
	var off int64
	seen, reads := 0, 0
	for finished := false; !finished; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		var err error
		if _, off, err = ReadEvents(path, off, wire.Cursor{}, func(*wire.Event) error { seen++; return nil }); err != nil {
			t.Fatalf("read %d, during appends: %v", reads, err)
		}
	}
	if seen != appends {
		t.Fatalf("after the appends: %d events, want %d", seen, appends)
	}
	t.Logf("%d reads", reads)
}
