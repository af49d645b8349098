package ledger

import (
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

// TestDiffTrees: cards created, changed and removed between two versions,
// activity with owners in order, a refused claim marked, heartbeats
// counted, and events only the old version holds marked removed.
func TestDiffTrees(t *testing.T) {
	id := func(n int) string { return "00000000000000" + string(rune('a'+n/26)) + string(rune('a'+n%26)) }
	n := 0
	ev := func(op Op, card string, mod func(*Event)) *Event {
		e := &Event{V: 1, ID: id(n), At: t0.Add(time.Duration(n) * time.Second), Actor: "x", Op: op, Card: card}
		n++
		if mod != nil {
			mod(e)
		}
		return e
	}
	base := []*Event{
		ev(OpCreate, "A", func(e *Event) { e.Fields = &Fields{Title: strp("a")} }),
		ev(OpCreate, "B", func(e *Event) { e.Fields = &Fields{Title: strp("b")} }),
	}
	onlyOld := ev(OpCreate, "GONE", func(e *Event) { e.Fields = &Fields{Title: strp("gone")} })
	added := []*Event{
		ev(OpClaim, "A", func(e *Event) { e.Owner, e.Epoch, e.ExpectVersion, e.TTLSeconds = "w1", 1, 1, 600 }),
		ev(OpClaim, "A", func(e *Event) { e.Owner, e.Epoch, e.ExpectVersion, e.TTLSeconds = "w2", 1, 1, 600 }),
		ev(OpHeartbeat, "A", func(e *Event) { e.Owner, e.Epoch, e.TTLSeconds = "w1", 1, 600 }),
		ev(OpComplete, "A", func(e *Event) { e.Owner, e.Epoch, e.Reason = "w1", 1, "ok" }),
		ev(OpUpdate, "B", func(e *Event) { e.Fields = &Fields{Priority: intp(2)} }),
		ev(OpCreate, "C", func(e *Event) { e.Fields = &Fields{Title: strp("c"), Phase: strp("M1")} }),
	}
	tree := func(evs ...*Event) Tree {
		b, err := store.EncodeEvents(evs)
		if err != nil {
			t.Fatal(err)
		}
		return Tree{LedgerFile: b}
	}
	d, err := DiffTrees(tree(append(base, onlyOld)...), tree(append(append([]*Event{}, base...), added...)...))
	if err != nil {
		t.Fatal(err)
	}
	if d.EventsAdded != 6 || d.EventsRemoved != 1 || len(d.Cards) != 4 {
		t.Fatalf("diff %+v", d)
	}
	a, b, c, gone := d.Cards[0], d.Cards[1], d.Cards[2], d.Cards[3]
	if a.ID != "A" || a.Change != "changed" || a.Heartbeats != 1 || len(a.Activity) != 3 {
		t.Fatalf("A: %+v", a)
	}
	if a.Activity[0].Owner != "w1" || a.Activity[0].Refused || a.Activity[1].Owner != "w2" || !a.Activity[1].Refused ||
		a.Activity[2].Op != OpComplete || a.Activity[2].Reason != "ok" {
		t.Errorf("A activity %+v", a.Activity)
	}
	if len(a.Fields) != 2 || a.Fields[0].Field != "status" || a.Fields[0].New != StatusDone || a.Fields[1].Field != "close_note" {
		t.Errorf("A fields %+v", a.Fields)
	}
	if b.ID != "B" || len(b.Fields) != 1 || b.Fields[0] != (Change{Field: "priority", Old: 0, New: 2}) || len(b.Activity) != 0 {
		t.Errorf("B: %+v", b)
	}
	if c.ID != "C" || c.Change != "created" || c.Title != "c" {
		t.Errorf("C: %+v", c)
	}
	if gone.ID != "GONE" || gone.Change != "removed" || gone.Title != "gone" {
		t.Errorf("GONE: %+v", gone)
	}

	// The same version on both sides: nothing.
	d, err = DiffTrees(tree(base...), tree(base...))
	if err != nil || len(d.Cards) != 0 || d.EventsAdded != 0 || d.EventsRemoved != 0 {
		t.Fatalf("same: %+v, %v", d, err)
	}
}
