package wire

import (
	"fmt"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// t0 is the time the tests' events start at.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const year = 365 * 24 * time.Hour

func intp(v int) *int            { return &v }
func strp(v string) *string      { return &v }
func strs(v ...string) *[]string { return &v }

// benchEvents is a realistic history: cards created, claimed, heartbeated,
// completed, with some of them linked.
func benchEvents(cards int) []*Event {
	var evs []*Event
	at := t0
	n := 0
	add := func(e *Event) {
		at = at.Add(time.Millisecond)
		n++
		e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", n), at, "bench"
		evs = append(evs, e)
	}
	for i := 0; i < cards; i++ {
		id := fmt.Sprintf("card-%06d", i)
		add(&Event{Op: OpCreate, Card: id, Fields: &Fields{Title: strp("a card title of some length"), Priority: intp(i % 7), Labels: strs("x", "y")}})
		if i > 0 && i%5 == 0 {
			add(&Event{Op: OpLink, Card: id, To: fmt.Sprintf("card-%06d", i-1)})
		}
	}
	for i := 0; i < cards; i++ {
		id := fmt.Sprintf("card-%06d", i)
		v := int64(1)
		if i > 0 && i%5 == 0 {
			v = 2
		}
		add(&Event{Op: OpClaim, Card: id, Owner: "w", TTLSeconds: 600, ExpectVersion: v, Epoch: 1})
		add(&Event{Op: OpHeartbeat, Card: id, Owner: "w", Epoch: 1, Progress: intp(50)})
		add(&Event{Op: OpComplete, Card: id, Owner: "w", Epoch: 1})
	}
	return evs
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
