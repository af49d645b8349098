package ledger

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
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
		t.Fatalf("the fast path took a line the JSON decoder rejects (%v):\n%q\n%s", err, line, dumpSnapshotLine(fast))
	}
	for i := range in {
		in[i] = 'X'
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("the fast path and the JSON decoder disagree on\n%q\nfast: %s\njson: %s", line, dumpSnapshotLine(fast), dumpSnapshotLine(want))
	}
	return true
}

// snapshotEvents is a history whose cards between them have every card
// field set and unset, with receipts for its request ids and one conflict.
func snapshotEvents() []*Event {
	var evs []*Event
	at := t0
	n := 0
	add := func(e *Event) {
		at = at.Add(1234567 * time.Nanosecond)
		n++
		e.V, e.ID, e.At = 1, fmt.Sprintf("%016x", n), at
		if e.Actor == "" {
			e.Actor = "alice@host"
		}
		if n%3 != 0 {
			e.RequestID = fmt.Sprintf("req-%d-\"é\"", n)
		}
		evs = append(evs, e)
	}
	deferUntil := t0.Add(72 * time.Hour)
	srcAt := time.Date(2019, 3, 4, 5, 6, 7, 123000000, time.FixedZone("", -8*3600)) // an imported card's times
	title := `Fix "quoted" title \ path/to`
	body := "line 1\nline 2\ttabbed\r\n<b>é ✓ 😀</b>\u2028\x01 & <script>"
	add(&Event{Op: OpCreate, Card: "A", Fields: &Fields{Title: strp("a")}})
	add(&Event{Op: OpCreate, Card: "every-field", Fields: &Fields{Title: &title, Body: &body, Phase: strp("M1"), Priority: intp(-3),
		Labels: strs("api", "ui", "é"), DependsOn: strs("A"), Parent: strp("A"), Acceptance: strs(`returns 200 for "GET /cards"`, "x"),
		MaxAttempts: intp(2), DeferUntil: &deferUntil, IdempotencyKey: "idem-1", Assignee: strp("bob \"b\" é"),
		SourceCreatedAt: &srcAt, SourceUpdatedAt: &srcAt, SourceClosedAt: &srcAt}})
	add(&Event{Op: OpCreate, Card: "claimed", Fields: &Fields{Title: strp("claimed card"), Labels: strs("x"), Priority: intp(2)}})
	add(&Event{Op: OpClaim, Card: "claimed", Owner: "agent-7", TTLSeconds: 600, ExpectVersion: 1, Epoch: 1})
	add(&Event{Op: OpCreate, Card: "beating", Fields: &Fields{Title: strp("beating card")}})
	add(&Event{Op: OpClaim, Card: "beating", Owner: "agent-8", TTLSeconds: 60, ExpectVersion: 1, Epoch: 1})
	add(&Event{Op: OpHeartbeat, Card: "beating", Owner: "agent-8", Epoch: 1, Progress: intp(40),
		Checkpoint: json.RawMessage(`{"step":"build","n":[1,-2.5e3,0.25,true,false,null],"s":"x\"\\\u00e9\ud83d\ude00","o":{}}`)})
	add(&Event{Op: OpCreate, Card: "blocked", Fields: &Fields{Title: strp("blocked card")}})
	add(&Event{Op: OpBlock, Card: "blocked", Reason: "waiting on \"vendor\""})
	add(&Event{Op: OpCreate, Card: "done", Fields: &Fields{Title: strp("done card"), Acceptance: strs("a", "b")}})
	add(&Event{Op: OpClaim, Card: "done", Owner: "w", TTLSeconds: 600, ExpectVersion: 1, Epoch: 1})
	add(&Event{Op: OpHeartbeat, Card: "done", Owner: "w", Epoch: 1, Progress: intp(0), Checkpoint: json.RawMessage(`"s"`)})
	add(&Event{Op: OpComplete, Card: "done", Owner: "w", Epoch: 1, Reason: "shipped ✓"})
	add(&Event{Op: OpCreate, Card: "reopened", Fields: &Fields{Title: strp("reopened card")}})
	add(&Event{Op: OpComplete, Card: "reopened"})
	add(&Event{Op: wire.OpReopen, Card: "reopened"})
	add(&Event{Op: OpCreate, Card: "exhausted", Fields: &Fields{Title: strp("exhausted"), MaxAttempts: intp(1)}})
	add(&Event{Op: OpClaim, Card: "exhausted", Owner: "w", TTLSeconds: 1, ExpectVersion: 1, Epoch: 1})
	add(&Event{Op: OpRelease, Card: "exhausted", Owner: "w", Epoch: 1})
	add(&Event{Op: OpCreate, Card: "linked", Fields: &Fields{Title: strp("linked")}})
	add(&Event{Op: OpLink, Card: "linked", To: "A"})
	add(&Event{Op: OpLink, Card: "linked", To: "done"})
	add(&Event{Op: OpUpdate, Card: "linked", Fields: &Fields{Body: strp("now with a body"), Labels: strs("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q")}})
	add(&Event{Op: OpUpdate, Card: "missing", Fields: &Fields{Title: strp("no such card")}}) // a conflict
	add(&Event{Op: OpNote, Card: "linked", Text: "tried \"x\"; see log\nnext: é ✓"})
	add(&Event{Op: OpNote, Card: "linked", Text: "imported comment", SourceAt: &srcAt})
	add(&Event{Op: OpNote, Card: "claimed", Owner: "agent-7", Epoch: 1, Text: "half way"})
	add(&Event{Op: OpCreate, Card: "failing", Fields: &Fields{Title: strp("failing"), MaxAttempts: intp(2)}})
	add(&Event{Op: OpClaim, Card: "failing", Owner: "w", TTLSeconds: 60, ExpectVersion: 1, Epoch: 1})
	add(&Event{Op: OpFail, Card: "failing", Owner: "w", Epoch: 1, Reason: "exit status 1", BackoffSeconds: 30, BackoffMaxSeconds: 3600})
	add(&Event{Op: OpLink, Card: "linked", To: "failing", LinkType: LinkDuplicates})
	add(&Event{Op: OpLink, Card: "linked", To: "reopened", LinkType: wire.LinkRelated})
	add(&Event{Op: OpCreate, Card: "gone", Fields: &Fields{Title: strp("deleted card")}})
	add(&Event{Op: OpCreate, Card: "kid", Fields: &Fields{Title: strp("a child"), Parent: strp("linked")}})
	add(&Event{Op: wire.OpDelete, Card: "gone", Reason: "a \"duplicate\""})
	add(&Event{Op: OpCreate, Card: "reviewed", Fields: &Fields{Title: strp("reviewed"), Paths: strs("src/lexer/**", "docs/*.md")}})
	add(&Event{Op: OpClaim, Card: "reviewed", Owner: "w", TTLSeconds: 60, ExpectVersion: 1, Epoch: 1})
	add(&Event{Op: OpReview, Card: "reviewed", Owner: "w", Epoch: 1, Commit: "4f2a9c1", Branch: "bl/reviewed"})
	add(&Event{Op: OpReject, Card: "reviewed", Actor: "bob@host", Epoch: 1, Reason: "needs a \"test\""})
	return evs
}

// snapshotLines returns the lines after the header of the snapshot of the
// state evs fold into, without their newlines.
func snapshotLines(t testing.TB, evs []*Event) [][]byte {
	t.Helper()
	s := fold.Fold(evs)
	out, _, err := encodeSnapshot(s, nil, nil)
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

// TestDecodeSnapshotLineTakesEveryLine: every line encodeSnapshot writes
// for a rich set of cards takes the fast path and decodes to what was
// written; between them the cards have every field set and unset.
func TestDecodeSnapshotLineTakesEveryLine(t *testing.T) {
	evs := snapshotEvents()
	s := fold.Fold(evs)
	if len(s.Conflicts()) != 1 {
		t.Fatalf("want one conflict, got %+v", s.Conflicts())
	}
	set, unset := map[string]bool{}, map[string]bool{}
	var kinds [3]int
	for _, line := range append(snapshotLines(t, evs), snapshotLines(t, benchEvents(10))...) {
		if !checkSnapshotLine(t, line) {
			t.Fatalf("the fast path declined a line encodeSnapshot wrote:\n%s", line)
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
				t.Fatalf("card %s decoded as\n%s\nwant\n%s", l.Card.ID, dumpSnapshotLine(l), b)
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
	for _, evs := range [][]*Event{snapshotEvents(), benchEvents(50)} {
		s := fold.Fold(evs)
		out, _, err := encodeSnapshot(s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := decodeSnapshot("snapshot.json", bytes.NewReader(out), &indexBuild{})
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

// dumpSnapshotLine shows a line's value for failure messages: as JSON, with
// the time zones, which JSON leaves out.
func dumpSnapshotLine(l wire.SnapshotLine) string {
	b, _ := json.Marshal(l)
	out := string(b)
	if c := l.Card; c != nil {
		out += fmt.Sprintf(" checkpoint=%q labels.nil=%v depends_on.nil=%v acceptance.nil=%v", []byte(c.Checkpoint), c.Labels == nil, c.DependsOn == nil, c.Acceptance == nil)
		for name, ts := range map[string]*time.Time{"claimed_at": c.ClaimedAt, "lease_expires_at": c.LeaseExpiresAt, "last_heartbeat_at": c.LastHeartbeatAt,
			"defer_until": c.DeferUntil, "closed_at": c.ClosedAt, "created_at": &c.CreatedAt, "updated_at": &c.UpdatedAt} {
			if ts != nil {
				out += fmt.Sprintf(" %s.loc=%q", name, ts.Location())
			}
		}
	}
	if r := l.Receipt; r != nil {
		out += fmt.Sprintf(" at.loc=%q", r.At.Location())
	}
	return out
}
