package ledger

import (
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"reflect"
	"testing"
	"time"
)

// TestChangesStep: an update reports the fields it changed with the values
// the fold held before it; other events and a refused update report none.
func TestChangesStep(t *testing.T) {
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	ev := func(n int, op wire.Op, card string, mod func(*wire.Event)) *wire.Event {
		e := &wire.Event{V: 1, ID: string(rune('a'+n)) + "000000000000000", At: at(n), Actor: "x", Op: op, Card: card}
		if mod != nil {
			mod(e)
		}
		return e
	}
	defer_ := at(2)
	c := fold.NewChanges()
	steps := []struct {
		e    *wire.Event
		want []fold.Change
		err  bool
	}{
		{ev(1, wire.OpCreate, "A", func(e *wire.Event) { e.Fields = &wire.Fields{Title: strp("one"), Priority: intp(1), Labels: strs("x")} }), nil, false},
		{ev(2, wire.OpUpdate, "A", func(e *wire.Event) {
			e.Fields = &wire.Fields{Title: strp("two"), Priority: intp(1), Labels: strs("x", "y"), DeferUntil: &defer_}
		}), []fold.Change{
			{Field: "title", Old: "one", New: "two"},
			{Field: "labels", Old: []string{"x"}, New: []string{"x", "y"}},
			{Field: "defer_until", Old: nil, New: defer_},
		}, false},
		{ev(3, wire.OpClaim, "A", func(e *wire.Event) { e.Owner, e.TTLSeconds, e.Epoch, e.ExpectVersion = "w", 60, 1, 2 }), nil, false},
		// Refused: the card does not exist.
		{ev(4, wire.OpUpdate, "B", func(e *wire.Event) { e.Fields = &wire.Fields{Title: strp("x")} }), nil, true},
		{ev(5, wire.OpUpdate, "A", func(e *wire.Event) { e.Fields = &wire.Fields{Phase: strp("M1"), DeferUntil: &time.Time{}} }), []fold.Change{
			{Field: "phase", Old: "", New: "M1"},
			{Field: "defer_until", Old: defer_, New: nil},
		}, false},
	}
	for i, s := range steps {
		got, err := c.Step(s.e)
		if (err != nil) != s.err {
			t.Fatalf("step %d: err %v, want error %v", i, err, s.err)
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("step %d: changes %#v, want %#v", i, got, s.want)
		}
	}
	if c.Last() != wire.CursorOf(steps[len(steps)-1].e) {
		t.Errorf("Last %v", c.Last())
	}
}

// TestHistoryChanges: the old values of an update come from the whole
// history, archived or not, also when --limit or --from shows only the
// newest events.
func TestHistoryChanges(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Title = "one" })
	up := func(title string) {
		t.Helper()
		if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: wire.Fields{Title: strp(title)}}); err != nil {
			t.Fatal(err)
		}
	}
	up("two")
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	up("three")
	up("four")
	type seen struct{ old, new any }
	collect := func(f HistoryFilter, newest int) []seen {
		t.Helper()
		var out []seen
		_, _, err := e.b.HistoryChanges(f, newest, func(ev *wire.Event, c *wire.Conflict, ch []fold.Change) error {
			if ev.Op == wire.OpUpdate {
				if len(ch) != 1 || ch[0].Field != "title" {
					t.Fatalf("changes %v", ch)
				}
				out = append(out, seen{ch[0].Old, ch[0].New})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	all := []seen{{"one", "two"}, {"two", "three"}, {"three", "four"}}
	if got := collect(HistoryFilter{}, 0); !reflect.DeepEqual(got, all) {
		t.Errorf("all: %v", got)
	}
	if got := collect(HistoryFilter{}, 1); !reflect.DeepEqual(got, all[2:]) {
		t.Errorf("newest 1: %v", got)
	}
	evs := historyEvents(t, e.dir)
	if got := collect(HistoryFilter{From: wire.CursorOf(evs[1]), Limit: 1}, 0); !reflect.DeepEqual(got, all[1:2]) {
		t.Errorf("from the first update, limit 1: %v", got)
	}
	if got := collect(HistoryFilter{Ops: []wire.Op{wire.OpUpdate}, Since: evs[2].At}, 0); !reflect.DeepEqual(got, all[1:]) {
		t.Errorf("since: %v", got)
	}

	// ChangesBefore then Step: what watch does at its first update.
	c, err := e.b.ChangesBefore(wire.CursorOf(evs[3]))
	if err != nil {
		t.Fatal(err)
	}
	if ch, _ := c.Step(evs[3]); len(ch) != 1 || ch[0].Old != "three" {
		t.Errorf("after ChangesBefore: %v", ch)
	}
}

// TestCardChanges: the lease fields are listed only when asked for.
func TestCardChanges(t *testing.T) {
	a := wire.Card{ID: "A", Title: "t", Status: wire.StatusReady}
	b := a
	b.Status, b.ClaimOwner, b.ClaimEpoch, b.Attempts = wire.StatusClaimed, "w", 1, 1
	if got := fold.CardChanges(&a, &b, false); !reflect.DeepEqual(got, []fold.Change{{Field: "status", Old: wire.StatusReady, New: wire.StatusClaimed}}) {
		t.Errorf("without lease: %v", got)
	}
	if got := fold.CardChanges(&a, &b, true); len(got) != 4 {
		t.Errorf("with lease: %v", got)
	}
	if got := fold.CardChanges(&a, &a, true); got != nil {
		t.Errorf("same card: %v", got)
	}
}
