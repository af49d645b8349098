package ledger

import (
	"bytes"
	"fmt"
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

// TestAppendedEventsByBytes: appendedEvents decodes only the lines a new
// ledger adds after the old one's bytes, and answers as decoding both
// ledgers whole does (the events added, whether it is an append, the
// error and its line) — for an append, an appended damaged line, an old
// ledger without its last line end, an old event appended again, an
// appended event older than the old ones, and a removed line.
func TestAppendedEventsByBytes(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	ev := func(e *Event) *Event {
		n++
		at = at.Add(time.Second)
		e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", n), at, "t"
		return e
	}
	enc := func(evs ...*Event) []byte {
		data, err := store.EncodeEvents(evs)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a := ev(&Event{Op: OpCreate, Card: "A", Fields: &Fields{Title: strp("a")}})
	b := ev(&Event{Op: OpNote, Card: "A", Text: "b"})
	c := ev(&Event{Op: OpNote, Card: "A", Text: "c"})
	early := &Event{V: 1, ID: "0000000000000000", At: a.At.Add(-time.Hour), Actor: "t", Op: OpNote, Card: "A", Text: "early"}
	old := enc(a, b)
	cases := map[string][2][]byte{
		"append":             {old, enc(a, b, c)},
		"damaged line":       {old, append(enc(a, b), "{\"v\":1,not json\n"...)},
		"torn line":          {old, append(enc(a, b), `{"v":1`...)},
		"no last line end":   {bytes.TrimSuffix(old, []byte("\n")), enc(a, b, c)},
		"old event again":    {old, enc(a, b, b, c)},
		"older event":        {old, enc(a, b, early)},
		"removed line":       {old, enc(a, c)},
		"empty old":          {nil, enc(a)},
		"same":               {old, old},
		"old damaged at end": {append(enc(a), "{\"v\":1,not json\n"...), append(enc(a), "{\"v\":1,not json\n"...)},
	}
	for name, c := range cases {
		o, nw := Tree{LedgerFile: c[0]}, Tree{LedgerFile: c[1]}
		got, gotOK, gotErr := appendedEvents(o, nw)
		want, wantOK, wantErr := wholeAppendedEvents(o, nw)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || gotOK != wantOK || fmt.Sprint(eventIDList(got)) != fmt.Sprint(eventIDList(want)) {
			t.Errorf("%s: got %v %v %v, decoding whole %v %v %v", name, eventIDList(got), gotOK, gotErr, eventIDList(want), wantOK, wantErr)
		}
	}
}

// wholeAppendedEvents is appendedEvents decoding both ledgers whole.
func wholeAppendedEvents(old, new Tree) ([]*Event, bool, error) {
	eo, err := store.Tree{LedgerFile: old[LedgerFile]}.Union(LedgerFile)
	if err != nil {
		return nil, false, err
	}
	en, err := store.Tree{LedgerFile: new[LedgerFile]}.Union(LedgerFile)
	if err != nil {
		return nil, false, err
	}
	inNew := eventIDs(en)
	for _, e := range eo {
		if !inNew[e.ID] {
			return nil, false, nil
		}
	}
	for i, e := range en[:len(eo)] {
		if e.ID != eo[i].ID {
			return nil, false, nil
		}
	}
	return en[len(eo):], true, nil
}

func eventIDList(evs []*Event) []string {
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.ID+" "+e.Text)
	}
	return ids
}
