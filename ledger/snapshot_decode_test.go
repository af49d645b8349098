package ledger

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// The snapshot as the store writes it, read back by the decoders. The
// decoders themselves are tested in package wire.

// checkSnapshotLine reports whether the fast path takes line, and fails
// unless what it gives is what the JSON decoder gives and shares no memory
// with line. (Package wire compares the two decoders on any line.)
func checkSnapshotLine(t *testing.T, line []byte) bool {
	t.Helper()
	in := bytes.Clone(line)
	fast, ok := wire.DecodeSnapshotFast(in)
	if !ok {
		return false
	}
	var want wire.SnapshotLine
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatalf("the fast path took a line the JSON decoder rejects (%v):\n%q\n%s", err, line, wire.DumpSnapshotLine(fast))
	}
	for i := range in {
		in[i] = 'X'
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("the fast path and the JSON decoder disagree on\n%q\nfast: %s\njson: %s", line, wire.DumpSnapshotLine(fast), wire.DumpSnapshotLine(want))
	}
	return true
}

// snapshotLines returns the lines after the header of the snapshot of the
// state evs fold into, without their newlines.
func snapshotLines(t testing.TB, evs []*Event) [][]byte {
	t.Helper()
	s := fold.Fold(evs)
	out, _, err := store.EncodeSnapshot(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for i, l := range bytes.SplitAfter(out, []byte{'\n'}) {
		if i == 0 || len(l) == 0 {
			continue
		}
		body, err := wire.CheckFrame(l)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, body)
	}
	return lines
}

// TestDecodeSnapshotLineTakesEveryLine: every line store.EncodeSnapshot writes
// for a rich set of cards takes the fast path and decodes to what was
// written; between them the cards have every field set and unset.
func TestDecodeSnapshotLineTakesEveryLine(t *testing.T) {
	evs := wire.SnapshotEvents()
	s := fold.Fold(evs)
	if len(s.Conflicts()) != 1 {
		t.Fatalf("want one conflict, got %+v", s.Conflicts())
	}
	set, unset := map[string]bool{}, map[string]bool{}
	var kinds [3]int
	for _, line := range append(snapshotLines(t, evs), snapshotLines(t, wire.BenchEvents(10))...) {
		if !checkSnapshotLine(t, line) {
			t.Fatalf("the fast path declined a line store.EncodeSnapshot wrote:\n%s", line)
		}
		l, _ := wire.DecodeSnapshotFast(line)
		switch {
		case l.Card != nil:
			kinds[0]++
			var m struct {
				Card map[string]json.RawMessage `json:"card"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range jsonKeys(reflect.TypeFor[Card]()) {
				if _, ok := m.Card[k]; ok {
					set[k] = true
				} else {
					unset[k] = true
				}
			}
			if want := s.Find(l.Card.ID); want != nil && !reflect.DeepEqual(l.Card, want) {
				b, _ := json.Marshal(want)
				t.Fatalf("card %s decoded as\n%s\nwant\n%s", l.Card.ID, wire.DumpSnapshotLine(l), b)
			}
		case l.Receipt != nil:
			kinds[1]++
		case l.Conflict != nil:
			kinds[2]++
		}
	}
	if kinds[0] == 0 || kinds[1] == 0 || kinds[2] == 0 {
		t.Fatalf("cards, receipts, conflicts: %v", kinds)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Card]()) {
		k, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !set[k] {
			t.Errorf("no card has %s", k)
		}
		if opts == "omitempty" && !unset[k] {
			t.Errorf("every card has %s", k)
		}
	}
}

// jsonKeys lists the JSON names of a struct's fields.
func jsonKeys(typ reflect.Type) []string {
	var keys []string
	for _, f := range reflect.VisibleFields(typ) {
		k, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		keys = append(keys, k)
	}
	return keys
}

// TestDecodeSnapshotRoundTrip: a snapshot written and read back, in full and
// through its index, gives the state that was written.
func TestDecodeSnapshotRoundTrip(t *testing.T) {
	for _, evs := range [][]*Event{wire.SnapshotEvents(), wire.BenchEvents(50)} {
		s := fold.Fold(evs)
		out, _, err := store.EncodeSnapshot(s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := store.DecodeSnapshot("snapshot.json", bytes.NewReader(out), &store.IndexBuild{})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := stateJSON(t, s), stateJSON(t, got); a != b {
			t.Fatalf("snapshot read back as\n%s\nwant\n%s", b, a)
		}
		for id, c := range cardMap(s) {
			if !reflect.DeepEqual(cardMap(got)[id], c) {
				t.Fatalf("card %s read back as %+v, want %+v", id, cardMap(got)[id], c)
			}
		}
		if !reflect.DeepEqual(receiptMap(got), receiptMap(s)) {
			t.Fatalf("receipts read back as %+v, want %+v", receiptMap(got), receiptMap(s))
		}
	}
}
