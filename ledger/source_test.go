package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// manyCards is a compacted backlog of 300 cards (with idempotency keys) and
// its index, written by the compaction; automatic compaction is off so the
// snapshot and its index stay put while the test writes.
func manyCards(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	noCompaction(e)
	for i := range 300 {
		e.create(fmt.Sprintf("card-%03d", i), func(r *CreateRequest) { r.IdempotencyKey = fmt.Sprintf("key-%03d", i) })
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDamagedIndexIsNotNotFound: with any block of the index damaged, a
// create that depends on an existing card (checked by the op rules, deep
// inside Check) succeeds, as do a lookup by idempotency key, a read of a
// card and a link: the source reads the whole snapshot instead. Before the
// source, the failed read made the dependency "not found" (exit 3).
func TestDamagedIndexIsNotNotFound(t *testing.T) {
	e := manyCards(t)
	good, err := os.ReadFile(filepath.Join(e.dir, CacheDir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	blocks := int(binary.LittleEndian.Uint32(good[len(good)-8:]))
	if blocks < 3 {
		t.Fatalf("index has %d blocks; the test needs several", blocks)
	}
	for blk := range blocks {
		// A fresh copy of the compacted backlog each time, with one block
		// of its index damaged.
		dir := t.TempDir()
		copyDir(t, e.dir, dir)
		bad := append([]byte(nil), good...)
		bad[blk*store.IndexBlock+9] ^= 0x10
		if err := os.WriteFile(filepath.Join(dir, CacheDir, IndexFile), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(dir, Options{Clock: e.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if !isLazy(b) && blk > 0 { // block 0 holds the header, checked at open
			t.Fatalf("block %d: the index was not used", blk)
		}
		for i, dep := range []string{"card-000", "card-150", "card-299", fmt.Sprintf("card-%03d", (blk*37)%300)} {
			id := fmt.Sprintf("new-%d", i)
			c, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: id, Title: id, DependsOn: []string{dep}})
			if err != nil {
				t.Fatalf("block %d: create depending on %s: %v", blk, dep, err)
			}
			if !slices.Equal(c.DependsOn, []string{dep}) {
				t.Fatalf("block %d: depends on %v, want %s", blk, c.DependsOn, dep)
			}
		}
		if _, created, err := b.Create(e.ctx, CreateRequest{Mutation: m, Title: "again", IdempotencyKey: "key-123"}); err != nil || created {
			t.Fatalf("block %d: create with a used key: created=%v err=%v", blk, created, err)
		}
		if got, err := b.Get("card-201"); err != nil || got.ID != "card-201" {
			t.Fatalf("block %d: get: %v", blk, err)
		}
		if _, err := b.Link(e.ctx, m, "card-007", "card-260"); err != nil {
			t.Fatalf("block %d: link: %v", blk, err)
		}
		b.Close()
	}
}

// damageSnapshotLine flips a byte in the snapshot line of card id and
// gives the file back its size and modification time, so the cached index
// still matches it and is used: the damage is found only when that line is
// read.
func damageSnapshotLine(t *testing.T, dir, id string) {
	t.Helper()
	path := filepath.Join(dir, SnapshotFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte(`"id":"`+id+`"`))
	if at < 0 {
		t.Fatalf("no line for %s in the snapshot", id)
	}
	data[at+len(`"id":"`)+1] ^= 0x01 // card-150 -> cbrd-150
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedSnapshotLineIsCorrupt: when the snapshot line itself is
// damaged, every call that needs it fails as corrupt (exit 6), whether the
// read happens in a write's checks, in a selection or in a plain read;
// none answers "not found" or carries on without the card. Calls that do
// not need the line still work.
func TestDamagedSnapshotLineIsCorrupt(t *testing.T) {
	e := manyCards(t)
	damageSnapshotLine(t, e.dir, "card-150")
	// Each call on its own copy and handle, so none sees what another
	// call's failure left behind.
	fresh := func() (*Backlog, string) {
		dir := t.TempDir()
		copyDir(t, e.dir, dir)
		b, err := Open(dir, Options{Clock: e.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if !isLazy(b) {
			t.Fatal("the index was not used")
		}
		return b, dir
	}
	calls := map[string]func(b *Backlog) error{
		"create depending on it": func(b *Backlog) error {
			_, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: "n1", Title: "n1", DependsOn: []string{"card-150"}})
			return err
		},
		"create with its key": func(b *Backlog) error {
			_, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, Title: "n2", IdempotencyKey: "key-150"})
			return err
		},
		"get": func(b *Backlog) error { _, err := b.Get("card-150"); return err },
		"update": func(b *Backlog) error {
			_, err := b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "card-150", Fields: Fields{Phase: ptr("x")}})
			return err
		},
		"link to it": func(b *Backlog) error { _, err := b.Link(e.ctx, m, "card-001", "card-150"); return err },
		"claim it": func(b *Backlog) error {
			_, err := b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w", ID: "card-150"})
			return err
		},
		"list all": func(b *Backlog) error { _, err := b.List(Filter{}, SortID); return err },
		"ready":    func(b *Backlog) error { _, err := b.Ready(Filter{}); return err },
		"stats":    func(b *Backlog) error { _, err := b.Stats(); return err },
		"view card": func(b *Backlog) error {
			return b.view(func(s *fold.State, _ time.Time) error { s.Card("card-150"); return nil })
		},
		"view by key": func(b *Backlog) error {
			return b.view(func(s *fold.State, _ time.Time) error { s.CardByKey("key-150"); return nil })
		},
		"view claimable": func(b *Backlog) error {
			return b.view(func(s *fold.State, n time.Time) error { s.Claimable("card-150", n); return nil })
		},
	}
	for name, call := range calls {
		b, dir := fresh()
		if _, err := b.Get("card-003"); err != nil {
			t.Fatalf("%s: a card whose line is intact: %v", name, err)
		}
		err := call(b)
		if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want a corrupt snapshot", name, err)
		}
		if evs := readEvents(t, filepath.Join(dir, LedgerFile)); len(evs) != 0 {
			t.Errorf("%s: %d events appended", name, len(evs))
		}
	}
	// A compaction must read every card: it fails, and changes nothing.
	b, dir := fresh()
	if _, err := b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "card-003", Fields: Fields{Phase: ptr("x")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Compact(e.ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("compact: %v, want a corrupt snapshot", err)
	}
	if evs := readEvents(t, filepath.Join(dir, LedgerFile)); len(evs) != 1 {
		t.Errorf("%d events in the ledger after a failed compaction, want 1", len(evs))
	}
}

// TestFoldStopsAtUnreadableLine: an event appended by another process about
// a card whose snapshot line is damaged cannot be folded; the handle that
// catches up reports the damage instead of answering from a state that
// skipped the event.
func TestFoldStopsAtUnreadableLine(t *testing.T) {
	e := manyCards(t)
	reader := e.open()
	defer reader.Close()
	if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "card-150", Fields: Fields{Phase: ptr("P1")}}); err != nil {
		t.Fatal(err)
	}
	// The damage comes after the write; the reader has not read the line.
	damageSnapshotLine(t, e.dir, "card-150")
	for range 2 {
		if _, err := reader.List(Filter{Phase: "P1"}, SortID); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("list after another process's update: %v, want a corrupt snapshot", err)
		}
	}
}

// TestSourceReleased: a state whose backlog was closed fails its reads
// with an error rather than answering "none".
func TestSourceReleased(t *testing.T) {
	e := manyCards(t)
	b := e.open()
	var s *fold.State
	if err := b.view(func(st *fold.State, _ time.Time) error { s = st; return nil }); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := s.Check(&Event{Op: OpLink, Card: "card-001", To: "card-002"}); !errors.Is(err, fold.ErrReleased) {
		t.Fatalf("check after close: %v", err)
	}
}

// failingSource fails every read: a state holding it can answer only from
// what it read before.
type failingSource struct{ fold.CardSource }

var errTestRead = errors.New("test: read during the fold")

func (failingSource) Card(string) (*Card, error)            { return nil, errTestRead }
func (failingSource) KeyOwner(string) (string, bool, error) { return "", false, errTestRead }
func (failingSource) Receipt(string) (Receipt, bool, error) {
	return Receipt{}, false, errTestRead
}
func (failingSource) Fill(map[string]*Card, map[string]Receipt) error {
	return errTestRead
}
func (failingSource) Referrers(string) ([]*Card, error) { return nil, errTestRead }
func (failingSource) Leased(time.Time, func([]byte) bool, func(*Card) bool) error {
	return errTestRead
}
func (failingSource) Candidates(int, time.Time, func([]byte) bool, func(*Card) bool) (int, error) {
	return 0, errTestRead
}

// TestFoldReadsNothing: once prepare has read what an event needs, the
// fold applies it with every snapshot read failing: it reads nothing, so
// it cannot meet a read error. The events touch parents, dependencies and
// idempotency keys, all still on disk when prepare starts.
func TestFoldReadsNothing(t *testing.T) {
	e := manyCards(t)
	// card-050 is a child of card-051 in the snapshot.
	if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "card-050", Fields: Fields{Parent: ptr("card-051")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	b := e.open()
	defer b.Close()
	var s *fold.State
	if err := b.view(func(st *fold.State, _ time.Time) error { s = st; return nil }); err != nil {
		t.Fatal(err)
	}
	if s.Source() == nil {
		t.Fatal("the index was not used")
	}
	at := t0.Add(time.Hour)
	evs := []*Event{
		{Op: OpCreate, Card: "n1", Fields: &Fields{Title: ptr("n1"), Parent: ptr("card-010"), DependsOn: &[]string{"card-011", "card-012"}, IdempotencyKey: "key-new"}},
		{Op: OpUpdate, Card: "card-020", Fields: &Fields{Parent: ptr("card-021")}},
		{Op: OpUpdate, Card: "card-020", Fields: &Fields{Parent: ptr("card-022")}},
		{Op: OpLink, Card: "card-030", To: "card-031"},
		{Op: OpClaim, Card: "card-040", Owner: "w", TTLSeconds: 600, ExpectVersion: 1, Epoch: 1},
		{Op: OpComplete, Card: "card-040", Owner: "w", Epoch: 1},
		{Op: wire.OpDelete, Card: "card-050", Reason: "r"},
	}
	for i, ev := range evs {
		ev.V, ev.ID, ev.At, ev.Actor = 1, fmt.Sprintf("%016x", 1000+i), at.Add(time.Duration(i)*time.Second), "t"
		var c *Card
		var conflict error
		if err := s.Resolve(func() { c, conflict = s.Prepare(ev) }); err != nil {
			t.Fatalf("%s %s: prepare: %v", ev.Op, ev.Card, err)
		}
		real := s.Source()
		s.SetSource(failingSource{real})
		err := s.Fold(ev, c, conflict)
		s.SetSource(real)
		if err != nil {
			t.Fatalf("%s %s: %v", ev.Op, ev.Card, err)
		}
		if f := s.TakeFault(); f != nil {
			t.Fatalf("%s %s: the fold read the snapshot: %v", ev.Op, ev.Card, f)
		}
	}
	if p := s.Find("card-022"); p == nil || p.OpenChildren != 1 {
		t.Errorf("card-022 counts %+v open children, want 1", p)
	}
	if p := s.Find("card-021"); p == nil || p.OpenChildren != 0 {
		t.Errorf("card-021 counts %+v open children, want 0", p)
	}
	if p := s.Find("card-051"); p == nil || p.OpenChildren != 0 {
		t.Errorf("card-051 counts %+v open children, want 0 (its child was deleted)", p)
	}
}

// TestReferrersReadThroughIndex: what names a card (children, dependents,
// links) is found through the index's reference table, reading those
// cards and not the other 300, and agrees with the full fold, including
// cards the ledger changed after the snapshot. Before the table, bl show
// of one card read every card of the backlog.
func TestReferrersReadThroughIndex(t *testing.T) {
	e := newEnv(t)
	noCompaction(e)
	for i := range 300 {
		id := fmt.Sprintf("card-%03d", i)
		e.create(id, func(r *CreateRequest) {
			switch i {
			case 1, 2:
				r.Parent = "card-000"
			case 3:
				r.DependsOn = []string{"card-000"}
			}
		})
	}
	if _, err := e.b.LinkTyped(e.ctx, LinkRequest{Mutation: m, From: "card-004", To: "card-000", Type: LinkRelated}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	// After the snapshot: a new child, a new dependent, a child deleted.
	e.create("card-300", func(r *CreateRequest) { r.Parent = "card-000" })
	if _, err := e.b.Link(e.ctx, m, "card-006", "card-000"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "card-001"}); err != nil {
		t.Fatal(err)
	}
	read := func(b *Backlog) (links []Link, kids []string) {
		if err := b.View(func(s *State, _ time.Time) error {
			links = s.LinksTo("card-000")
			for _, k := range s.Children("card-000") {
				kids = append(kids, k.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return links, kids
	}
	lazy := e.open()
	defer lazy.Close()
	if lazy.held().Source() == nil {
		t.Fatal("the backlog did not open through its index")
	}
	links, kids := read(lazy)
	if n, _, _ := lazy.held().InMemory(); n > 20 {
		t.Errorf("finding what names one card read %d cards into memory", n)
	}
	whole := e.open()
	defer whole.Close()
	if _, err := whole.List(Filter{}, SortID); err != nil { // reads every card
		t.Fatal(err)
	}
	wantLinks, wantKids := read(whole)
	if fmt.Sprint(links) != fmt.Sprint(wantLinks) || !slices.Equal(kids, wantKids) {
		t.Errorf("through the index: links %v, children %v; the full fold: links %v, children %v", links, kids, wantLinks, wantKids)
	}
	if len(wantLinks) != 3 || !slices.Equal(wantKids, []string{"card-002", "card-300"}) {
		t.Errorf("the full fold: links %v, children %v", wantLinks, wantKids)
	}
}
