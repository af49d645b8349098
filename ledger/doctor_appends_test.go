package ledger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/lock"
)

// TestDiagnoseDuringAppends: bl doctor reads the ledger without the lock
// while a writer, holding the lock as bl does, appends a batch of long lines
// in one write, whose pages land one by one. Its read can end in the
// middle of a line; the report must not call that damage, or a torn tail
// to repair.
func TestDiagnoseDuringAppends(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"compact_bytes":-1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b = e.open() // reads the config
	e.create("A", func(r *CreateRequest) { r.Body = strings.Repeat("a", MaxBodyLen) })
	// Appended again, the line reads as a repeated line: not damage.
	batch := bytes.Repeat(e.lines()[0], 8)
	f, err := os.OpenFile(e.ledgerPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := int64(len(e.bytes()))
	lk := lock.New(filepath.Join(e.dir, LockFile))
	const reads = 40
	for i := range reads {
		writing, wrote := make(chan struct{}), make(chan error, 1)
		go func() {
			if err := lk.Acquire(context.Background(), time.Minute); err != nil {
				wrote <- err
				return
			}
			close(writing)
			_, err := f.Write(batch)
			lk.Release() // before the next round can use lk
			wrote <- err
		}()
		<-writing
		rep, err := Diagnose(e.dir, e.clk.Now())
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatalf("read %d, during an append: %v", i, err)
		}
		if rep.Corrupt || rep.TornTail != nil || rep.LostNewline != 0 {
			t.Fatalf("read %d, during an append: corrupt %v, torn tail %+v, lost newline %d, damage %+v", i, rep.Corrupt, rep.TornTail, rep.LostNewline, rep.Damage)
		}
		// Back to one line for the next round, so each read stays short.
		if err := lk.Acquire(context.Background(), time.Minute); err != nil {
			t.Fatal(err)
		}
		err = f.Truncate(base)
		lk.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckSeenDuringWrites: two bl doctor checks of the history seen run
// over and over, each raising the record to what it read, while a writer
// appends and compacts. One may read the files just before the other
// records a later history, or in the middle of a compaction; neither may
// report events as missing.
func TestCheckSeenDuringWrites(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"compact_bytes":4096}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b = e.open() // reads the config
	const creates = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range creates {
			e.create(fmt.Sprintf("C%d", i))
		}
	}()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for checks := 0; ; checks++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				m, err := CheckSeen(e.dir, false)
				if err == nil && m != nil {
					err = fmt.Errorf("check %d: %+v missing while nothing was taken out", checks, *m)
				}
				if err != nil {
					<-done
					errs <- err
					return
				}
			}
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
