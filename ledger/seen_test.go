package ledger

import (
	"bytes"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

// TestCheckSeen: events this clone saw that the files lose (a git revert
// or reset) are reported until they come back or doctor --repair accepts
// the files; the record never goes down by itself.
func TestCheckSeen(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.create("B")
	e.create("C")
	full := e.bytes()
	check := func(accept bool) *MissingEvents {
		t.Helper()
		m, err := CheckSeen(e.dir, accept)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := check(false); m != nil {
		t.Fatalf("no record yet: %+v", m)
	}
	// A revert: the last event is gone from the files.
	lines := bytes.SplitAfter(full, []byte{'\n'})
	e.writeLedger(bytes.Join(lines[:2], nil))
	m := check(false)
	if m == nil || m.Missing != 1 || m.Seen != 3 || m.Now != 2 || !m.NewestGone {
		t.Fatalf("after the revert: %+v", m)
	}
	// Compaction and sync raise the record, never lower it.
	store.RecordSeen(e.dir, 2, *e.lastEvent())
	if m := check(false); m == nil || m.Missing != 1 {
		t.Fatalf("store.RecordSeen lowered the record: %+v", m)
	}
	// A merge brings the event back.
	e.writeLedger(full)
	if m := check(false); m != nil {
		t.Fatalf("after the merge: %+v", m)
	}
	// A reset followed by new events: the count is back, the event is not.
	e.writeLedger(bytes.Join(lines[:2], nil))
	e.b = e.open()
	e.create("D")
	m = check(false)
	if m == nil || m.Missing != 1 || !m.NewestGone || m.Now != 3 {
		t.Fatalf("after reset and a new event: %+v", m)
	}
	// --repair accepts the files as they are.
	if m := check(true); m == nil {
		t.Fatal("accept reports what it accepts")
	}
	if m := check(false); m != nil {
		t.Fatalf("after accepting: %+v", m)
	}
}

// TestCompactRecordsSeen: compaction writes the record, so a revert of a
// compacted history is noticed without doctor having run before it.
func TestCompactRecordsSeen(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.create("B")
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	r, ok := store.ReadSeen(e.dir)
	if !ok || r.Events != 2 {
		t.Fatalf("record %+v, %v", r, ok)
	}
}
