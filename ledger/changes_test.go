package ledger

import (
	"reflect"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// TestChangesStep: an update reports the fields it changed with the values
// the fold held before it; other events and a refused update report none.
func TestChangesStep(t *testing.T) {
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	ev := func(n int, op Op, card string, mod func(*Event)) *Event {
		e := &Event{V: 1, ID: string(rune('a'+n)) + "000000000000000", At: at(n), Actor: "x", Op: op, Card: card}
		if mod != nil {
			mod(e)
		}
		return e
	}
	defer_ := at(2)
	c := fold.NewChanges()
	steps := []struct {
		e    *Event
		want []Change
		err  bool
	}{
		{ev(1, OpCreate, "A", func(e *Event) { e.Fields = &Fields{Title: strp("one"), Priority: intp(1), Labels: strs("x")} }), nil, false},
		{ev(2, OpUpdate, "A", func(e *Event) {
			e.Fields = &Fields{Title: strp("two"), Priority: intp(1), Labels: strs("x", "y"), DeferUntil: &defer_}
		}), []Change{
			{Field: "title", Old: "one", New: "two"},
			{Field: "labels", Old: []string{"x"}, New: []string{"x", "y"}},
			{Field: "defer_until", Old: nil, New: defer_},
		}, false},
		{ev(3, OpClaim, "A", func(e *Event) { e.Owner, e.TTLSeconds, e.Epoch, e.ExpectVersion = "w", 60, 1, 2 }), nil, false},
		// Refused: the card does not exist.
		{ev(4, OpUpdate, "B", func(e *Event) { e.Fields = &Fields{Title: strp("x")} }), nil, true},
		{ev(5, OpUpdate, "A", func(e *Event) { e.Fields = &Fields{Phase: strp("M1"), DeferUntil: &time.Time{}} }), []Change{
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
	if c.Last() != CursorOf(steps[len(steps)-1].e) {
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
		if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Title: strp(title)}}); err != nil {
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
		_, _, err := e.b.HistoryChanges(f, newest, func(ev *Event, c *Conflict, ch []Change) error {
			if ev.Op == OpUpdate {
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
	if got := collect(HistoryFilter{From: CursorOf(evs[1]), Limit: 1}, 0); !reflect.DeepEqual(got, all[1:2]) {
		t.Errorf("from the first update, limit 1: %v", got)
	}
	if got := collect(HistoryFilter{Ops: []Op{OpUpdate}, Since: evs[2].At}, 0); !reflect.DeepEqual(got, all[1:]) {
		t.Errorf("since: %v", got)
	}

	// ChangesBefore then Step: what watch does at its first update.
	c, err := e.b.ChangesBefore(CursorOf(evs[3]))
	if err != nil {
		t.Fatal(err)
	}
	if ch, _ := c.Step(evs[3]); len(ch) != 1 || ch[0].Old != "three" {
		t.Errorf("after ChangesBefore: %v", ch)
	}
}

// TestCardChanges: the lease fields are listed only when asked for.
func TestCardChanges(t *testing.T) {
	a := Card{ID: "A", Title: "t", Status: StatusReady}
	b := a
	b.Status, b.ClaimOwner, b.ClaimEpoch, b.Attempts = StatusClaimed, "w", 1, 1
	if got := fold.CardChanges(&a, &b, false); !reflect.DeepEqual(got, []Change{{Field: "status", Old: StatusReady, New: StatusClaimed}}) {
		t.Errorf("without lease: %v", got)
	}
	if got := fold.CardChanges(&a, &b, true); len(got) != 4 {
		t.Errorf("with lease: %v", got)
	}
	if got := fold.CardChanges(&a, &a, true); got != nil {
		t.Errorf("same card: %v", got)
	}
}
