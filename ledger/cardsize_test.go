package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// longList returns n entries of about size bytes each.
func longList(prefix string, n, size int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d-%s", prefix, i, strings.Repeat("x", size))
	}
	return out
}

// TestCardSizeBounded reproduces the overflow: 250 long labels, then long
// acceptance criteria. Each event fits in a line; the card would not fit in
// a snapshot line, so the update is refused, naming the limit, and nothing
// changes.
func TestCardSizeBounded(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Labels = longList("label", 250, 2000) })
	acceptance := longList("acc", 250, 2000)
	err := e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Acceptance: &acceptance}})
		return err
	})
	if !strings.Contains(err.Error(), strconv.Itoa(MaxCardBytes)) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("error does not name the limit: %v", err)
	}
	// The same card in one create is refused too (its event is too long
	// for a line, which is checked first), as is a new card whose fields
	// fit in a line but not in a card.
	_, _, err = e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "B", Title: "b",
		Labels: longList("l", 250, 1900), Acceptance: longList("a", 250, 1900), Body: strings.Repeat("b", 40<<10)})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), strconv.Itoa(MaxCardBytes)) {
		t.Fatalf("create of an oversized card: %v", err)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	checkSnapshotLines(t, e.dir)
	if _, err := Diagnose(e.dir, t0); err != nil {
		t.Fatal(err)
	}
}

// TestCardJustUnderTheBound: a card just under MaxCardBytes is accepted,
// takes a lease with a full checkpoint and a block reason, compacts, and
// reads back the same in a fresh clone (no index, no cache).
func TestCardJustUnderTheBound(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Labels = longList("label", 250, 2000) })
	c := fillTo(t, e, "A", MaxCardBytes-8)
	// One more label is over the bound, and so is a link.
	e.create("B")
	labels := append(append([]string{}, c.Labels...), strings.Repeat("y", 64))
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Labels: &labels}})
		return err
	})
	longID := "B" + strings.Repeat("b", wire.MaxIDLen-1)
	e.create(longID)
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Link(e.ctx, m, "A", longID)
		return err
	})
	// What leases add fits in the room kept for it.
	e.claim("A", strings.Repeat("o", 200), time.Minute)
	checkpoint := []byte(`{"k":"` + strings.Repeat("c", wire.MaxCheckpoint-16) + `"}`)
	if _, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: strings.Repeat("o", 200), Progress: intp(50), Checkpoint: checkpoint}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Block(e.ctx, LeaseRequest{Mutation: m, ID: "A", Reason: strings.Repeat("r", 4096)}); err != nil {
		t.Fatal(err)
	}
	want := e.card("A")
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	checkSnapshotLines(t, e.dir)

	clone := t.TempDir()
	for _, name := range []string{LedgerFile, SnapshotFile, ConfigFile} {
		data, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(clone, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := store.ArchiveNames(e.dir)
	if err := os.MkdirAll(filepath.Join(clone, ArchiveDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		data, _ := os.ReadFile(filepath.Join(e.dir, n))
		if err := os.WriteFile(filepath.Join(clone, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Open(clone, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.Get("A")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Acceptance, want.Acceptance) || len(got.Labels) != 250 || got.Version != want.Version || got.BlockedReason != want.BlockedReason {
		t.Fatalf("clone reads card A differently: version %d, %d labels", got.Version, len(got.Labels))
	}
	if rep, err := Diagnose(clone, t0); err != nil || rep.Corrupt {
		t.Fatalf("doctor in the clone: %+v, %v", rep, err)
	}
	if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: "C", Title: "c"}); err != nil {
		t.Fatalf("create in the clone: %v", err)
	}
}

// TestCardSizeLeaseOps: an op that is not an edit is refused only when the
// card would outgrow a snapshot line.
func TestCardSizeLeaseOps(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Labels = longList("label", 250, 2000) })
	fillTo(t, e, "A", MaxCardBytes-2048)
	owner := strings.Repeat("o", 100<<10)
	err := e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: owner, TTL: time.Minute})
		return err
	})
	if !strings.Contains(err.Error(), strconv.Itoa(wire.MaxLine-wire.CardLineOverhead)) {
		t.Fatalf("error does not name the line limit: %v", err)
	}
}

// TestCardSizeInTheFold: an event merged in from elsewhere that would
// overflow the card is a recorded conflict, not a snapshot line readers
// refuse.
func TestCardSizeInTheFold(t *testing.T) {
	labels, acceptance := longList("l", 250, 2000), longList("a", 250, 2000)
	title := "a"
	evs := []*Event{
		{V: 1, ID: "01", At: t0, Actor: "x", Op: OpCreate, Card: "A", Fields: &Fields{Title: &title, Labels: &labels}},
		{V: 1, ID: "02", At: t0.Add(1), Actor: "x", Op: OpUpdate, Card: "A", Fields: &Fields{Acceptance: &acceptance}},
	}
	for _, ev := range evs {
		if line, err := EncodeLine(ev); err != nil || len(line) > wire.MaxLine {
			t.Fatalf("event line of %d bytes: %v", len(line), err)
		}
	}
	s := fold.Fold(evs)
	if cs := s.Conflicts(); len(cs) != 1 || cs[0].Event != "02" || !strings.Contains(cs[0].Reason, strconv.Itoa(MaxCardBytes)) {
		t.Fatalf("conflicts %+v", cs)
	}
	c, _ := s.Card("A")
	if len(c.Acceptance) != 0 || c.Version != 1 {
		t.Fatalf("card after the refused update: version %d, %d acceptance", c.Version, len(c.Acceptance))
	}
	out, _, err := store.EncodeSnapshot(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range splitLines(out) {
		if len(l) > wire.MaxLine {
			t.Fatalf("snapshot line %d is %d bytes", i+1, len(l))
		}
	}
}

// checkSnapshotLines fails if any snapshot line is longer than a reader
// accepts.
func checkSnapshotLines(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(l) > wire.MaxLine {
			t.Fatalf("snapshot line %d is %d bytes, over %d", i+1, len(l), wire.MaxLine)
		}
	}
}

// cardBytes is the length of c's JSON in a snapshot line.
func cardBytes(t *testing.T, c Card) int {
	t.Helper()
	line, err := wire.AppendFramed(nil, wire.SnapshotLine{Card: &c})
	if err != nil {
		t.Fatal(err)
	}
	return len(line) - wire.CardLineOverhead
}

// fillTo sets acceptance criteria on card id that make it target bytes
// once updated (the update's own stamp and version are measured by a first
// update, then the list is trimmed to fit).
func fillTo(t *testing.T, e *env, id string, target int) Card {
	t.Helper()
	list := longList("acc", 200, 2000)
	var c Card
	for round := 0; round < 3; round++ {
		probe := e.card(id)
		probe.Acceptance = list
		diff := target - cardBytes(t, probe)
		if round == 0 {
			diff -= 64 // room for the update's own stamp and version
		}
		if round > 0 && diff == 0 {
			return c
		}
		last := list[len(list)-1]
		if diff < 0 {
			list[len(list)-1] = last[:len(last)+diff]
		} else {
			list[len(list)-1] = last + strings.Repeat("z", diff)
		}
		var err error
		if c, err = e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: id, Fields: Fields{Acceptance: &list}}); err != nil {
			t.Fatal(err)
		}
		list = append([]string{}, list...)
		if cardBytes(t, c) == target {
			return c
		}
	}
	t.Fatalf("card %s is %d bytes, want %d", id, cardBytes(t, c), target)
	return c
}
