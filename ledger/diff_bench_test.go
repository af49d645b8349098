package ledger

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// diffBenchTrees is a backlog of about 50k events of history, compacted
// into ten archive segments and a snapshot, and the same backlog with 100
// new events in its ledger: the two sides of bl diff on adjacent commits.
func diffBenchTrees(tb testing.TB) (old, new Tree) {
	tb.Helper()
	evs := wire.BenchEvents(12_000)
	old = Tree{LedgerFile: nil}
	for i := 0; i < 10; i++ {
		chunk, err := store.EncodeEvents(evs[i*len(evs)/10 : (i+1)*len(evs)/10])
		if err != nil {
			tb.Fatal(err)
		}
		old[LedgerFile] = chunk
		led, err := store.DecodeAll(LedgerFile, chunk)
		if err != nil {
			tb.Fatal(err)
		}
		if old, _, err = normalTree(old, led); err != nil {
			tb.Fatal(err)
		}
	}
	at := evs[len(evs)-1].At
	var tail []*Event
	for i := range 100 {
		at = at.Add(time.Millisecond)
		tail = append(tail, &Event{V: 1, ID: fmt.Sprintf("new%013x", i), At: at, Actor: "bench", Op: OpCreate, Card: fmt.Sprintf("new-%03d", i), Fields: &Fields{Title: strp("a new card")}})
	}
	data, err := store.EncodeEvents(tail)
	if err != nil {
		tb.Fatal(err)
	}
	new = maps.Clone(old)
	new[LedgerFile] = data
	return old, new
}

// BenchmarkDiffAdjacent measures bl diff's work on two adjacent commits:
// 100 new events on top of ~50k events of shared history. Its cost must
// follow the change, not the history.
func BenchmarkDiffAdjacent(b *testing.B) {
	old, new := diffBenchTrees(b)
	d, err := DiffTrees(old, new)
	if err != nil || d.EventsAdded != 100 || d.EventsRemoved != 0 || len(d.Cards) != 100 {
		b.Fatalf("diff = %d added, %d removed, %d cards, %v", d.EventsAdded, d.EventsRemoved, len(d.Cards), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := DiffTrees(old, new); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDiffAppendedMatchesFull: the fast comparison of adjacent commits
// gives exactly what the general one does, refused claims, notes and
// created cards included.
func TestDiffAppendedMatchesFull(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	ev := func(e *Event) *Event {
		n++
		at = at.Add(time.Second)
		e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", n), at, "t"
		return e
	}
	base := []*Event{
		ev(&Event{Op: OpCreate, Card: "A", Fields: &Fields{Title: strp("a")}}),
		ev(&Event{Op: OpCreate, Card: "B", Fields: &Fields{Title: strp("b")}}),
		ev(&Event{Op: OpClaim, Card: "A", Owner: "w1", TTLSeconds: 600, ExpectVersion: 1, Epoch: 1}),
	}
	more := []*Event{
		ev(&Event{Op: OpClaim, Card: "A", Owner: "w2", TTLSeconds: 600, ExpectVersion: 1, Epoch: 1}), // refused
		ev(&Event{Op: OpNote, Card: "B", Text: "a note"}),
		ev(&Event{Op: OpCreate, Card: "C", Fields: &Fields{Title: strp("c")}}),
		ev(&Event{Op: OpComplete, Card: "A", Owner: "w1", Epoch: 1, Reason: "shipped"}),
	}
	old := Tree{}
	data, _ := store.EncodeEvents(base[:2])
	old[LedgerFile] = data
	led, _ := store.DecodeAll(LedgerFile, data)
	old, _, err := normalTree(old, led)
	if err != nil {
		t.Fatal(err)
	}
	old[LedgerFile], _ = store.EncodeEvents(base[2:])
	new := maps.Clone(old)
	new[LedgerFile], _ = store.EncodeEvents(append(slices.Clone(base[2:]), more...))
	fast, ok, err := diffAppended(old, new, nil)
	if err != nil || !ok {
		t.Fatalf("diffAppended: ok %v, %v", ok, err)
	}
	full, err := diffFull(old, new)
	if err != nil {
		t.Fatal(err)
	}
	fj, _ := json.Marshal(fast)
	gj, _ := json.Marshal(full)
	if string(fj) != string(gj) {
		t.Fatalf("fast:\n%s\nfull:\n%s", fj, gj)
	}
	if !strings.Contains(string(fj), `"holder":"w1"`) || !strings.Contains(string(fj), `"text":"a note"`) {
		t.Fatalf("diff lacks the refused claim's holder or the note: %s", fj)
	}
}

func normalTree(t Tree, led []*Event) (Tree, *LostEvents, error) {
	n, lost, err := store.NormalTree(store.Tree(t), led)
	return Tree(n), lost, err
}
