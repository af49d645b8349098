package ledger

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func (e *env) history(f HistoryFilter) ([]string, Cursor) {
	e.t.Helper()
	var out []string
	cur, err := e.b.History(f, func(ev *Event, c *Conflict) error {
		s := fmt.Sprintf("%s %s", ev.Op, ev.Card)
		if c != nil {
			s += " conflict"
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out, cur
}

func TestHistoryAcrossCompaction(t *testing.T) {
	e := busy(t) // create A B C, claim A, complete C, heartbeat A, update B
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.create("D")
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	since := e.clk.Now()
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 1}); err != nil {
		t.Fatal(err)
	}

	all, end := e.history(HistoryFilter{})
	want := "[create A create B create C claim A complete C heartbeat A update B create D complete A]"
	if fmt.Sprint(all) != want {
		t.Fatalf("history = %v", all)
	}
	if got, _ := e.history(HistoryFilter{Card: "A"}); fmt.Sprint(got) != "[create A claim A heartbeat A complete A]" {
		t.Fatalf("card A = %v", got)
	}
	if got, _ := e.history(HistoryFilter{Ops: []Op{OpCreate}}); len(got) != 4 {
		t.Fatalf("creates = %v", got)
	}
	if got, _ := e.history(HistoryFilter{Since: since}); fmt.Sprint(got) != "[complete A]" {
		t.Fatalf("since = %v", got)
	}
	// Pages of 4 resume exactly where the previous stopped.
	var paged []string
	var cur Cursor
	for range 10 {
		page, next := e.history(HistoryFilter{From: cur, Limit: 4})
		paged = append(paged, page...)
		if len(page) == 0 {
			break
		}
		cur = next
	}
	if fmt.Sprint(paged) != want || cur != end {
		t.Fatalf("paged = %v (cursor %v, end %v)", paged, cur, end)
	}
	if c, err := ParseCursor(end.String()); err != nil || c != end {
		t.Fatalf("cursor round trip: %v %v", c, err)
	}
	if _, err := ParseCursor("nonsense"); err == nil {
		t.Fatal("bad cursor accepted")
	}
}

func TestNextWake(t *testing.T) {
	e := newEnv(t)
	if w, _ := e.b.NextWake(); !w.IsZero() {
		t.Fatalf("empty backlog wakes at %v", w)
	}
	e.create("A")
	e.create("B", func(r *CreateRequest) { r.DeferUntil = t0.Add(time.Hour) })
	c := e.claim("A", "w", 10*time.Minute)
	if w, _ := e.b.NextWake(); !w.Equal(*c.LeaseExpiresAt) {
		t.Fatalf("wake = %v, want lease expiry %v", w, c.LeaseExpiresAt)
	}
	e.clk.Advance(11 * time.Minute)
	if w, _ := e.b.NextWake(); !w.Equal(t0.Add(time.Hour)) {
		t.Fatalf("wake = %v, want the deferral", w)
	}
}

// TestArchivedEventsOverlap: segments that share events (two clones that
// compacted the same history) stream each event once, in order.
func TestArchivedEventsOverlap(t *testing.T) {
	e := busy(t)
	lines := e.lines()
	dir := t.TempDir()
	write := func(name string, idx ...int) string {
		var data []byte
		for _, i := range idx {
			data = append(data, lines[i]...)
		}
		p := dir + "/" + name
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.jsonl", 0, 1, 2, 4)
	b := write("b.jsonl", 1, 2, 3, 5, 6)
	var got []string
	cur, err := ArchivedEvents([]string{b, a}, Cursor{}, func(ev *Event) error {
		got = append(got, ev.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := e.events()
	if len(got) != len(evs) {
		t.Fatalf("got %d events, want %d", len(got), len(evs))
	}
	for i := range evs {
		if got[i] != evs[i].ID {
			t.Fatalf("event %d = %s, want %s", i, got[i], evs[i].ID)
		}
	}
	if cur != CursorOf(evs[len(evs)-1]) {
		t.Fatalf("cursor %v", cur)
	}
	// From a cursor in the middle: only what follows.
	n := 0
	if _, err := ArchivedEvents([]string{a, b}, CursorOf(evs[3]), func(*Event) error { n++; return nil }); err != nil || n != len(evs)-4 {
		t.Fatalf("after cursor: %d events, %v", n, err)
	}
}
