package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// ckHistory writes random histories: creates (some repeating an id or an
// idempotency key), dependencies and parents, claims with right and wrong
// versions and epochs, heartbeats, notes, releases and completes by the
// owner or by another (fenced), request ids (some repeated). An oracle
// fold picks mostly valid values, so most events apply and some are
// conflicts.
type ckHistory struct {
	r      *rand.Rand
	oracle *fold.State
	at     time.Time
	n      int
	ids    []string
	keys   bool // some creates carry an idempotency key
}

func newCkHistory(seed uint64) *ckHistory {
	// Half the histories create no card with an idempotency key: a key
	// looked up makes the load decode every card of a checkpoint, and
	// these keep them undecoded until the answers are asked.
	return &ckHistory{r: rand.New(rand.NewPCG(seed, 7)), oracle: fold.NewState(), at: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), keys: seed%2 == 1}
}

func (h *ckHistory) next() *wire.Event {
	h.n++
	h.at = h.at.Add(time.Duration(1+h.r.IntN(5000)) * time.Millisecond)
	e := &wire.Event{V: 1, ID: fmt.Sprintf("ev%06d", h.n), At: h.at, Actor: "a"}
	if h.r.IntN(4) == 0 {
		e.RequestID = fmt.Sprintf("rq%d", h.r.IntN(h.n+1))
	}
	if len(h.ids) == 0 || h.r.IntN(6) == 0 {
		e.Op = wire.OpCreate
		e.Card = fmt.Sprintf("K%03d", len(h.ids))
		if len(h.ids) > 0 && h.r.IntN(10) == 0 {
			e.Card = h.ids[h.r.IntN(len(h.ids))] // a duplicate id
		}
		title, prio := "card "+e.Card, h.r.IntN(5)
		e.Fields = &wire.Fields{Title: &title, Priority: &prio}
		if h.keys && h.r.IntN(5) == 0 {
			e.Fields.IdempotencyKey = fmt.Sprintf("key%d", h.r.IntN(10))
			if h.r.IntN(2) == 0 { // an importer's, named by its source key
				e.Fields.IdempotencyKey = fmt.Sprintf("tr:%d", h.r.IntN(10))
			}
		}
		if len(h.ids) > 0 && h.r.IntN(4) == 0 {
			deps := []string{h.ids[h.r.IntN(len(h.ids))]}
			e.Fields.DependsOn = &deps
		}
		if len(h.ids) > 0 && h.r.IntN(6) == 0 {
			p := h.ids[h.r.IntN(len(h.ids))]
			e.Fields.Parent = &p
		}
		if h.r.IntN(3) == 0 { // paths, some overlapping: a claim passes over the held ones
			paths := []string{[]string{"src/a/**", "src/a/x.go", "src/b/**", "docs/*.md"}[h.r.IntN(4)]}
			e.Fields.Paths = &paths
			e.V = e.LineVersion()
		}
		if h.oracle.Apply(e) == nil {
			h.ids = append(h.ids, e.Card)
		}
		return e
	}
	e.Card = h.ids[h.r.IntN(len(h.ids))]
	c, _ := h.oracle.Card(e.Card)
	owners := []string{"w1", "w2", "w3"}
	owner := c.ClaimOwner
	if owner == "" || h.r.IntN(8) == 0 {
		owner = owners[h.r.IntN(len(owners))]
	}
	epoch := c.ClaimEpoch
	if h.r.IntN(8) == 0 {
		epoch += int64(h.r.IntN(3)) - 1 // stale or never granted
	}
	switch k := h.r.IntN(7); k {
	case 0, 1:
		e.Op, e.Owner, e.TTLSeconds, e.Epoch, e.ExpectVersion = wire.OpClaim, owner, 600, c.ClaimEpoch+1, c.Version
		if h.r.IntN(8) == 0 {
			e.ExpectVersion++
		}
	case 2:
		e.Op, e.Owner, e.Epoch = wire.OpHeartbeat, owner, epoch
	case 3:
		e.Op, e.Text = wire.OpNote, fmt.Sprintf("note %d", h.n)
	case 4:
		e.Op, e.Owner, e.Epoch = wire.OpRelease, owner, epoch
	case 5:
		e.Op, e.Owner, e.Epoch = wire.OpComplete, owner, epoch
	case 6:
		e.Op, e.To = wire.OpLink, h.ids[h.r.IntN(len(h.ids))]
	}
	h.oracle.Apply(e)
	return e
}

// appendLines appends n events to dir's ledger as raw lines, as another
// writer (or a git pull adding lines) would.
func (h *ckHistory) appendLines(t *testing.T, dir string, n int) {
	t.Helper()
	var buf []byte
	for range n {
		line, err := wire.EncodeLine(h.next())
		if err != nil {
			t.Fatal(err)
		}
		buf = append(buf, line...)
	}
	f, err := os.OpenFile(filepath.Join(dir, LedgerFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(buf); err != nil {
		t.Fatal(err)
	}
}

// ckDump is everything a state answers, asked first lazily (the ready
// lists, claim order and picks, then point lookups, keys, standings) and
// then whole.
type ckDump struct {
	Ready      [][]string          // ready lists with limits, asked before anything else
	Pick       string              // what a claim takes, asked next
	PickBy     string              // what a claim by w2 takes (assigned cards aside)
	Refs       map[string][]string // card -> the links to it and its children, asked next
	Named      map[string][]string // word -> the cards it names
	Fresh      []any               // Refs and Named, each asked first on a handle of its own
	Point      []wire.Card         // looked up one by one
	KeyOwners  map[string]string   // idempotency key -> card, asked next
	Order, Top []string
	Standing   map[string]fold.Standing
	Stats      fold.Stats
	Hdr        wire.SnapshotHeader
	Cards      []wire.Card
	Receipts   []wire.Keyed
	Conflicts  []wire.Conflict
	Last       wire.Event
	Offset     int64
	Lines      int
	IDs        []uint64
}

func dumpStore(t *testing.T, dir string, now time.Time) (ckDump, bool) {
	t.Helper()
	d, via, _, _ := dumpStoreLazy(t, dir, now)
	return d, via
}

// dumpStoreLazy is dumpStore, and whether some of a checkpoint's cards
// were not decoded yet when the first answers were asked, and still after
// the ready lists and picks.
func dumpStoreLazy(t *testing.T, dir string, now time.Time) (d ckDump, via, lazy, walkLazy bool) {
	t.Helper()
	b, err := Open(dir, Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := b.state
	lazy = s.Undecoded() > 0
	// The reads in claim order first, while a checkpoint's cards are not
	// decoded: each decodes only the cards it reaches.
	d.Ready = readyLists(s, now)
	if c := s.Pick(fold.Filter{}, now); c != nil {
		d.Pick = c.ID
	}
	if c := s.Pick(fold.Filter{Claimer: "w2"}, now); c != nil {
		d.PickBy = c.ID
	}
	walkLazy = s.Undecoded() > 0
	// Each family of reads that decodes some of a checkpoint's cards is
	// asked first on a handle of its own as well, so it meets cards not
	// decoded yet: what it answers there is what it answers here.
	for _, ask := range []func(s *fold.State) any{
		func(s *fold.State) any { return readRefs(s) },
		func(s *fold.State) any { return readNamed(s) },
	} {
		b, err := Open(dir, Options{Clock: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		d.Fresh = append(d.Fresh, ask(b.state))
		ferr := b.state.TakeFault()
		b.Close()
		if ferr != nil {
			t.Fatal(ferr)
		}
	}
	d.Refs, d.Named = readRefs(s), readNamed(s)
	// Point lookups next, while some are still not decoded.
	for i := range 60 {
		if c := s.Find(fmt.Sprintf("K%03d", (i*7)%60)); c != nil {
			d.Point = append(d.Point, c.Clone())
		}
	}
	d.KeyOwners = map[string]string{}
	for i := range 10 {
		if id, ok := s.KeyOwner(fmt.Sprintf("key%d", i)); ok {
			d.KeyOwners[fmt.Sprintf("key%d", i)] = id
		}
	}
	s.InClaimOrder(now, func(c *wire.Card) bool {
		d.Order = append(d.Order, c.ID)
		return true
	})
	for _, c := range s.PickTop(fold.Filter{}, now, 5) {
		d.Top = append(d.Top, c.ID)
	}
	d.Standing = map[string]fold.Standing{}
	for i := range 60 {
		id := fmt.Sprintf("K%03d", i)
		if c := s.Find(id); c != nil {
			d.Standing[id] = s.Standing(c, now)
		}
	}
	d.Stats = s.Stats(now)
	if err := s.TakeFault(); err != nil {
		t.Fatal(err)
	}
	d.Last, d.Offset, d.Lines = s.Last(), b.pos.offset, b.pos.lines
	d.IDs = append(d.IDs, b.pos.ckIDs...)
	for h := range b.pos.ids {
		d.IDs = append(d.IDs, h)
	}
	slices.Sort(d.IDs)
	hdr, cards, receipts, conflicts, err := s.SnapshotLines()
	if err != nil {
		t.Fatal(err)
	}
	d.Hdr, d.Receipts, d.Conflicts = hdr, receipts, conflicts
	for _, c := range cards {
		d.Cards = append(d.Cards, c.Clone())
	}
	return d, b.ckptLines > 0, lazy, walkLazy
}

// readRefs is, for cards K000 to K059, the links to each and its
// children.
func readRefs(s *fold.State) map[string][]string {
	out := map[string][]string{}
	for i := range 60 {
		id := fmt.Sprintf("K%03d", (i*11)%60)
		refs := []string{}
		for _, l := range s.LinksTo(id) {
			refs = append(refs, l.Type+" "+l.To)
		}
		for _, c := range s.Children(id) {
			refs = append(refs, "child "+c.ID)
		}
		out[id] = refs
	}
	return out
}

// readNamed is the cards some typed words name (ids, source keys).
func readNamed(s *fold.State) map[string][]string {
	out := map[string][]string{}
	for _, w := range []string{"K00", "K001", "K01", "K0", "K012", "key1", "1", "3", "K99"} {
		out[w] = s.CardsNamed(w)
	}
	return out
}

// readyLists is the ready lists with limits, and a list of ready and
// claimed cards with a limit, as s answers them at now.
func readyLists(s *fold.State, now time.Time) [][]string {
	ids := func(cs []wire.Card) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	var out [][]string
	for _, k := range []int{1, 3, 10} {
		out = append(out, ids(s.List(fold.Filter{Ready: true, Limit: k}, now, "")))
	}
	out = append(out, ids(s.List(fold.Filter{Status: []wire.Status{wire.StatusReady, wire.StatusClaimed}, Limit: 4}, now, fold.SortClaim)))
	return out
}

// writeThrough checks e on a handle opened on dir and appends it when the
// rules allow: what the check said and the cards the append returned.
func writeThrough(t *testing.T, dir string, e *wire.Event, now time.Time) (out struct {
	Refused string
	Cards   []wire.Card
}) {
	t.Helper()
	b, err := Open(dir, Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	line, d, err := WrittenLine(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.withLock(t.Context(), func() error {
		if err := b.state.Check(d); err != nil {
			out.Refused = err.Error()
			return nil
		}
		cards, err := b.Append(t.Context(), []*wire.Event{d}, line)
		for _, c := range cards {
			out.Cards = append(out.Cards, c.Clone())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// claimThrough claims, on a handle opened on dir, the card a claim by
// owner takes at now, as bl claim does: what it claimed, and the ready
// lists the same handle answers after.
func claimThrough(t *testing.T, dir, owner string, now time.Time) (out struct {
	Card  wire.Card
	Ready [][]string
	Event *wire.Event // the claim appended; nil for none
}) {
	t.Helper()
	b, err := Open(dir, Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.withLock(t.Context(), func() error {
		var c *wire.Card
		if err := b.state.Resolve(func() { c = b.state.Pick(fold.Filter{Claimer: owner}, now) }); err != nil || c == nil {
			return err
		}
		at := now
		if last := b.state.Last(); !at.After(last.At) {
			at = last.At.Add(time.Nanosecond)
		}
		e := &wire.Event{V: 1, ID: fmt.Sprintf("cl-%s-%d", owner, now.UnixNano()), At: at, Actor: owner, Op: wire.OpClaim,
			Card: c.ID, Owner: owner, TTLSeconds: 600, ExpectVersion: c.Version, Epoch: c.ClaimEpoch + 1}
		line, d, err := WrittenLine(e)
		if err != nil {
			return err
		}
		if err := b.state.Check(d); err != nil {
			return err
		}
		cards, err := b.Append(t.Context(), []*wire.Event{d}, line)
		if len(cards) == 1 {
			out.Card, out.Event = cards[0].Clone(), d
		}
		out.Ready = readyLists(b.state, now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkpointHere writes the checkpoint of a handle opened on dir now.
func checkpointHere(t *testing.T, dir string) {
	t.Helper()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := writeCheckpoint(dir, b.snapInfo, b.state, &b.pos); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
}

func compactHere(t *testing.T, dir string) {
	t.Helper()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointEquivalence: over random histories, with compactions and
// checkpoints at random points, a load through the checkpoint answers
// exactly what folding the whole tail answers: every card, the ready
// order, picks, standings, stats, receipts, conflicts, the newest event
// and the event ids a later read checks repeats against.
func TestCheckpointEquivalence(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	used := 0     // rounds whose load went through a checkpoint
	lazy := 0     // and asked the first answers with cards not decoded
	walkLazy := 0 // and still had some after the ready lists and picks
	claims := 0   // claims that picked a card through a handle
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Init(dir); err != nil {
				t.Fatal(err)
			}
			h := newCkHistory(seed)
			h.appendLines(t, dir, 20+h.r.IntN(100))
			compactHere(t, dir)
			for round := range 4 {
				h.appendLines(t, dir, 1+h.r.IntN(80))
				checkpointHere(t, dir)
				after := h.r.IntN(60)
				h.appendLines(t, dir, after)
				if h.r.IntN(5) == 0 {
					compactHere(t, dir) // the checkpoint names the old files now
					h.appendLines(t, dir, h.r.IntN(20))
				}
				now := h.at.Add(time.Duration(h.r.IntN(1200)) * time.Second)
				got, via, undecoded, walkUndecoded := dumpStoreLazy(t, dir, now)
				if via {
					used++
				}
				if undecoded {
					lazy++
				}
				if walkUndecoded {
					walkLazy++
				}
				ck := filepath.Join(dir, CacheDir, CheckpointFile)
				aside := ck + ".aside"
				if err := os.Rename(ck, aside); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				want, viaNone := dumpStore(t, dir, now)
				if viaNone {
					t.Fatal("a load without a checkpoint file says it used one")
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d: the load through the checkpoint differs from the fold of the tail:\n got %+v\nwant %+v", round, got, want)
				}
				if err := os.Rename(aside, ck); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				// A write through a handle that loaded the checkpoint
				// (its cards not decoded yet) does what one through a
				// handle that folded the tail does.
				plain := t.TempDir()
				if err := os.CopyFS(plain, os.DirFS(dir)); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(plain, CacheDir, CheckpointFile))
				e := h.next()
				gotW, wantW := writeThrough(t, dir, e, now), writeThrough(t, plain, e, now)
				if !reflect.DeepEqual(gotW, wantW) {
					t.Fatalf("round %d: a write through the checkpoint differs from one after folding the tail:\n got %+v\nwant %+v", round, gotW, wantW)
				}
				// And so does a claim that picks its card, through a
				// checkpoint of the state after that write when there is one.
				if b, err := Open(dir, Options{}); err == nil {
					writeCheckpoint(dir, b.snapInfo, b.state, &b.pos)
					b.Close()
				}
				os.Remove(filepath.Join(plain, CacheDir, CheckpointFile))
				owner := []string{"w1", "w2", "w3"}[round%3]
				gotC, wantC := claimThrough(t, dir, owner, now), claimThrough(t, plain, owner, now)
				if !reflect.DeepEqual(gotC, wantC) {
					t.Fatalf("round %d: a claim through the checkpoint differs from one after folding the tail:\n got %+v\nwant %+v", round, gotC, wantC)
				}
				if ev := gotC.Event; ev != nil { // the history goes on from it
					claims++
					h.oracle.Apply(ev)
					h.at = ev.At
				}

				got, _ = dumpStore(t, dir, now)
				want, _ = dumpStore(t, plain, now)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d: after a write, the load through the checkpoint differs:\n got %+v\nwant %+v", round, got, want)
				}
			}
		})
	}
	if used < seeds {
		t.Fatalf("only %d of %d rounds loaded through a checkpoint", used, 4*seeds)
	}
	if lazy < seeds/2 {
		t.Fatalf("only %d rounds asked with a checkpoint's cards not decoded", lazy)
	}
	// The ready lists and picks decode only the cards they reach.
	if walkLazy < seeds/2 {
		t.Fatalf("only %d rounds kept some of a checkpoint's cards not decoded through the ready lists and picks", walkLazy)
	}
	if claims < seeds {
		t.Fatalf("only %d claims picked a card", claims)
	}
	t.Logf("%d of %d rounds loaded through a checkpoint, %d with cards not decoded, %d still after the walks; %d claims", used, 4*seeds, lazy, walkLazy, claims)
}

// TestCheckpointUndecodableCardFails: a card line that passes the
// checksums (only a local forgery can) but does not decode is not read
// at load; the read that needs that card fails, and answers neither
// without it nor with the snapshot's older copy.
func TestCheckpointUndecodableCardFails(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	h := newCkHistory(2)
	h.appendLines(t, dir, 60)
	compactHere(t, dir)
	h.appendLines(t, dir, 60)
	checkpointHere(t, dir)
	path := filepath.Join(dir, CacheDir, CheckpointFile)
	var id string
	reseal(t, path, func(body []byte) []byte {
		i := bytes.Index(body, cardLinePrefix)
		if i < 0 {
			t.Fatal("no card line in the checkpoint")
		}
		rest := body[i+len(cardLinePrefix):]
		id = string(rest[:bytes.IndexByte(rest, '"')])
		at := i + len(cardLinePrefix) + len(id) + 1
		return append(body[:at:at], append([]byte("!"), body[at:]...)...)
	})
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("the load fails: %v", err)
	}
	defer b.Close()
	if b.ckptLines == 0 {
		t.Fatal("the load did not use the checkpoint")
	}
	if c := b.state.Find(id); c != nil {
		t.Fatalf("Find(%s) answered %+v from a line that does not decode", id, c)
	}
	if err := b.state.TakeFault(); !errors.Is(err, wire.ErrCorrupt) {
		t.Fatalf("the fault is %v, want ErrCorrupt", err)
	}
	if _, err := b.state.ReadCard(id); !errors.Is(err, wire.ErrCorrupt) {
		t.Fatalf("ReadCard: %v, want ErrCorrupt", err)
	}
}
