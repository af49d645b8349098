package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

const stDeleted = "deleted" // A deleted

func doTyped(op Op, from, to, typ string) func(e *env) error {
	return func(e *env) error {
		r := LinkRequest{Mutation: m, From: from, To: to, Type: typ}
		var err error
		if op == OpLink {
			_, err = e.b.LinkTyped(e.ctx, r)
		} else {
			_, err = e.b.UnlinkTyped(e.ctx, r)
		}
		return err
	}
}

func doHandoff(owner string, epoch int64, to string) func(e *env) error {
	return func(e *env) error {
		_, err := e.b.Handoff(e.ctx, HandoffRequest{Mutation: m, ID: "A", Owner: owner, Epoch: epoch, To: to})
		return err
	}
}

// v3Transitions are the transitions of the ops and link types of format v3.
func v3Transitions() []transition {
	del := func(force bool) func(e *env) error {
		return func(e *env) error {
			_, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "A", Reason: "dup", Force: force})
			return err
		}
	}
	wantLinks := func(want ...Link) func(t *testing.T, c Card) {
		return func(t *testing.T, c Card) {
			if !reflect.DeepEqual(c.Links, want) && !(len(want) == 0 && len(c.Links) == 0) {
				t.Fatalf("links = %v, want %v", c.Links, want)
			}
		}
	}
	return []transition{
		{name: "link duplicates", state: stReady, op: OpLink, do: doTyped(OpLink, "A", "B", LinkDuplicates), check: wantLinks(Link{Type: LinkDuplicates, To: "B"})},
		{name: "link related", state: stReady, op: OpLink, do: doTyped(OpLink, "A", "B", wire.LinkRelated), check: wantLinks(Link{Type: wire.LinkRelated, To: "B"})},
		{name: "link typed twice", state: stReady, prep: func(e *env) { must2(e, doTyped(OpLink, "A", "B", LinkSupersedes)) },
			do: doTyped(OpLink, "A", "B", LinkSupersedes), want: ErrConflict},
		{name: "link unknown type", state: stReady, do: doTyped(OpLink, "A", "B", "fixes"), want: ErrInvalid},
		{name: "link typed to itself", state: stReady, do: doTyped(OpLink, "A", "A", wire.LinkRelated), want: ErrInvalid},
		{name: "link typed to a deleted card", state: stReady, prep: func(e *env) {
			must2(e, func(e *env) error {
				_, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "B"})
				return err
			})
		}, do: doTyped(OpLink, "A", "B", wire.LinkRelated), want: ErrNotFound},
		{name: "unlink typed", state: stReady, op: OpUnlink, prep: func(e *env) { must2(e, doTyped(OpLink, "A", "B", wire.LinkDiscoveredFrom)) },
			do: doTyped(OpUnlink, "A", "B", wire.LinkDiscoveredFrom), check: wantLinks()},
		{name: "unlink other type", state: stReady, prep: func(e *env) { must2(e, doTyped(OpLink, "A", "B", wire.LinkDiscoveredFrom)) },
			do: doTyped(OpUnlink, "A", "B", wire.LinkRelated), want: ErrConflict},

		{name: "handoff", state: stClaimed, op: wire.OpHandoff, do: doHandoff("w1", 1, "w2"), check: func(t *testing.T, c Card) {
			if c.ClaimOwner != "w2" || c.ClaimEpoch != 2 || c.Attempts != 1 || c.Status != StatusClaimed {
				t.Fatalf("after handoff: owner %s epoch %d attempts %d %s", c.ClaimOwner, c.ClaimEpoch, c.Attempts, c.Status)
			}
		}},
		{name: "handoff expired own lease", state: stExpired, op: wire.OpHandoff, do: doHandoff("w1", 1, "w2"), check: wantStatus(StatusClaimed)},
		{name: "handoff by another owner", state: stClaimed, do: doHandoff("w2", 1, "w3"), want: ErrFenced},
		{name: "handoff stale epoch", state: stClaimed, do: doHandoff("w1", 5, "w2"), want: ErrFenced},
		{name: "handoff without epoch", state: stClaimed, do: doHandoff("w1", 0, "w2"), want: ErrInvalid},
		{name: "handoff to itself", state: stClaimed, do: doHandoff("w1", 1, "w1"), want: ErrInvalid},
		{name: "handoff to nobody", state: stClaimed, do: doHandoff("w1", 1, ""), want: ErrInvalid},
		{name: "handoff ready", state: stReady, do: doHandoff("w1", 1, "w2"), want: ErrFenced},

		{name: "delete", state: stReady, op: wire.OpDelete, do: del(false), check: func(t *testing.T, c Card) {
			if c.DeletedAt == nil || c.DeleteReason != "dup" {
				t.Fatalf("deleted_at %v reason %q", c.DeletedAt, c.DeleteReason)
			}
		}},
		{name: "delete claimed", state: stClaimed, op: wire.OpDelete, do: del(false), check: wantStatus(StatusReady)},
		{name: "delete deleted", state: stDeleted, do: del(false), want: ErrNotFound},
		{name: "delete depended on", state: stReady, prep: func(e *env) { must2(e, doLink("B", "A")) }, do: del(false), want: ErrConflict},
		{name: "delete missing", state: stAbsent, do: del(false), want: ErrNotFound},
		{name: "restore", state: stDeleted, op: wire.OpRestore, do: func(e *env) error { _, err := e.b.Restore(e.ctx, m, "A"); return err },
			check: func(t *testing.T, c Card) {
				if c.DeletedAt != nil || c.DeleteReason != "" || c.Status != StatusReady {
					t.Fatalf("restored card: %+v", c)
				}
			}},
		{name: "restore live", state: stReady, do: func(e *env) error { _, err := e.b.Restore(e.ctx, m, "A"); return err }, want: ErrConflict},
		{name: "claim deleted", state: stDeleted, do: doClaim("A", "w2", time.Minute), want: ErrNotFound},
		{name: "update deleted", state: stDeleted, do: doUpdate("A", Fields{Title: strp("x")}), want: ErrNotFound},
		{name: "link to deleted", state: stDeleted, do: doLink("B", "A"), want: ErrNotFound},
	}
}

func must2(e *env, fn func(*env) error) {
	e.t.Helper()
	if err := fn(e); err != nil {
		e.t.Fatal(err)
	}
}

// TestLinkReadiness is the readiness table: a card A linked to B by each
// type, with B in each status, is claimable or not. blocks, supersedes and
// duplicates hold A back while B is open; discovered-from and related never.
func TestLinkReadiness(t *testing.T) {
	statuses := []string{stReady, stClaimed, stBlocked, stDone, stDeleted}
	holds := map[string]bool{wire.LinkBlocks: true, LinkSupersedes: true, LinkDuplicates: true}
	for _, typ := range wire.LinkTypes {
		for _, other := range statuses {
			t.Run(typ+"/"+other, func(t *testing.T) {
				e := newEnv(t)
				e.create("B")
				e.create("A")
				must2(e, doTyped(OpLink, "A", "B", typ))
				switch other {
				case stClaimed:
					e.claim("B", "w", time.Minute)
				case stBlocked:
					must2(e, func(e *env) error { _, err := e.b.Block(e.ctx, LeaseRequest{Mutation: m, ID: "B"}); return err })
				case stDone:
					must2(e, doLease(OpComplete, "B", "", 0))
				case stDeleted:
					must2(e, func(e *env) error {
						_, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "B", Force: false})
						if holds[typ] {
							if !errors.Is(err, ErrConflict) {
								t.Fatalf("delete of a card A depends on: %v", err)
							}
							return nil // refused: B stays ready
						}
						return err
					})
				}
				want := !holds[typ] || other == stDone
				var got bool
				if err := e.b.view(func(s *fold.State, now time.Time) error { got = s.Claimable("A", now); return nil }); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("A %s B (%s): claimable %v, want %v", typ, other, got, want)
				}
				// The fold agrees: a claim of A is refused or taken.
				_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w2", TTL: time.Minute})
				if (err == nil) != want {
					t.Fatalf("claim of A: %v, want claimable %v", err, want)
				}
				st, _ := e.b.Standings([]Card{e.card("A")})
				if held := slices.Contains(st[0].WaitingOn, "B"); held != (holds[typ] && other != stDone) {
					t.Fatalf("waiting_on = %v", st[0].WaitingOn)
				}
			})
		}
	}
}

// TestLinkCycles: a cycle of holding links is refused whatever types close
// it, naming the cycle; links that hold nothing may close any loop.
func TestLinkCycles(t *testing.T) {
	for _, first := range wire.LinkTypes {
		for _, second := range wire.LinkTypes {
			t.Run(first+"+"+second, func(t *testing.T) {
				e := newEnv(t)
				for _, id := range []string{"A", "B", "C"} {
					e.create(id)
				}
				must2(e, doTyped(OpLink, "A", "B", first))
				must2(e, doTyped(OpLink, "B", "C", first))
				err := doTyped(OpLink, "C", "A", second)(e)
				if LinkHolds(first) && LinkHolds(second) {
					if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "C → A → B → C") {
						t.Fatalf("closing a cycle: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("a loop with a link that holds nothing was refused: %v", err)
				}
			})
		}
	}
	// depends_on set by update is checked against typed links too.
	e := newEnv(t)
	e.create("A")
	e.create("B")
	must2(e, doTyped(OpLink, "A", "B", LinkDuplicates))
	e.unchanged(ErrConflict, doUpdate("B", Fields{DependsOn: &[]string{"A"}}))
}

// eventsOf reads the events of the env's ledger.
func foldShuffled(evs []*Event, seed uint64) *fold.State {
	cp := slices.Clone(evs)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(cp), func(i, j int) { cp[i], cp[j] = cp[j], cp[i] })
	// A clone folds what it holds in (at, id) order, whatever order it
	// learned the events in.
	slices.SortFunc(cp, wire.ByAtID)
	return fold.Fold(cp)
}

// TestCloneFoldsAgree: two clones that hold the same events of two writers
// (typed links, epics, handoffs, deletes, racing claims) fold the same
// state whatever order they learned them in, and the same state as the
// writers' own handles.
func TestCloneFoldsAgree(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		e := newEnv(t)
		ids := []string{"E", "A", "B", "C", "D"}
		for _, id := range ids {
			e.create(id)
		}
		var evs []*Event
		at := t0.Add(time.Hour)
		add := func(ev *Event) {
			at = at.Add(time.Duration(1+r.IntN(3)) * time.Second)
			ev.ID, ev.At, ev.Actor = fmt.Sprintf("%016x", len(evs)+1+int(seed)<<20), at, "x"
			evs = append(evs, ev)
		}
		base := e.events()
		// Two writers' events, interleaved at random: children joining
		// and leaving the epic, typed links, claims, handoffs, deletes.
		for range 40 {
			id := ids[1+r.IntN(4)]
			other := ids[r.IntN(5)]
			switch r.IntN(9) {
			case 0:
				p := "E"
				add(&Event{Op: OpUpdate, Card: id, Fields: &Fields{Parent: &p}})
			case 1:
				add(&Event{Op: OpLink, Card: id, To: other, LinkType: wire.WireLink(wire.LinkTypes[r.IntN(len(wire.LinkTypes))])})
			case 2:
				add(&Event{Op: OpClaim, Card: id, Owner: "w", TTLSeconds: 60, ExpectVersion: int64(r.IntN(6)), Epoch: int64(1 + r.IntN(3))})
			case 3:
				add(&Event{Op: wire.OpHandoff, Card: id, Owner: "w", Epoch: int64(1 + r.IntN(3)), To: "v"})
			case 4:
				add(&Event{Op: OpComplete, Card: id})
			case 5:
				add(&Event{Op: wire.OpDelete, Card: id})
			case 6:
				add(&Event{Op: wire.OpRestore, Card: id})
			case 7:
				add(&Event{Op: OpComplete, Card: "E", To: id})
			case 8:
				add(&Event{Op: wire.OpReopen, Card: id})
			}
		}
		all := append(base, evs...)
		want := foldShuffled(all, 0)
		var lines [][]byte
		for _, ev := range all {
			ev.V = ev.LineVersion()
			line, err := EncodeLine(ev)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		for k := uint64(1); k <= 3; k++ {
			got := foldShuffled(all, seed*10+k)
			if !reflect.DeepEqual(cardMap(got), cardMap(want)) || !reflect.DeepEqual(got.Conflicts(), want.Conflicts()) {
				t.Fatalf("seed %d: two clones disagree", seed)
			}
			// A clone whose ledger holds the lines in another order
			// (a git union merge) reads them to the same state.
			r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
			clone := newEnv(t)
			clone.writeLedger(bytes.Join(lines, nil))
			cs := clone.open().held()
			for id, c := range cardMap(want) {
				if got := cs.Find(id); !reflect.DeepEqual(got, c) {
					t.Fatalf("seed %d: the clone reads %s as\n%+v\nwant\n%+v", seed, id, got, c)
				}
			}
			if !reflect.DeepEqual(cs.Conflicts(), want.Conflicts()) {
				t.Fatalf("seed %d: the clone's conflicts differ", seed)
			}
		}
		// The count of open children the fold keeps is the count a
		// full recount derives.
		for id, c := range cardMap(want) {
			n := 0
			for _, k := range cardMap(want) {
				if k.Parent == id && k.OpenChild() {
					n++
				}
			}
			if c.OpenChildren != n {
				t.Fatalf("seed %d: %s counts %d open children, has %d", seed, id, c.OpenChildren, n)
			}
		}
	}
}

func writeConfig(t *testing.T, e *env, cfg string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
}

func parentE(r *CreateRequest) { r.Parent = "E" }

// TestEpicWaitsForChildren: an epic with open children is not claimable
// and stands waiting on them; done or deleted children do not hold it; the
// config switch keeps epics claimable.
func TestEpicWaitsForChildren(t *testing.T) {
	e := newEnv(t)
	e.create("E")
	e.create("C1", parentE)
	e.create("C2", parentE)
	if got := e.card("E").OpenChildren; got != 2 {
		t.Fatalf("open children = %d", got)
	}
	e.unchanged(ErrConflict, doClaim("E", "w", time.Minute))
	st, _ := e.b.Standings([]Card{e.card("E")})
	if st[0].State != StateWaiting || st[0].WaitingChildren != 2 {
		t.Fatalf("standing %+v", st[0])
	}
	if c, _ := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w", TTL: time.Minute}); c == nil || c.ID == "E" {
		t.Fatalf("claim picked %v", c)
	}
	must2(e, doLease(OpComplete, "C1", "w", 1))
	must2(e, func(e *env) error { _, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "C2"}); return err })
	if got := e.card("E").OpenChildren; got != 0 {
		t.Fatalf("open children after the last = %d", got)
	}
	if c := e.claim("E", "w", time.Minute); c.Status != StatusClaimed {
		t.Fatal(c)
	}
	// A reopened child holds its epic again; with the switch off it does not.
	must2(e, func(e *env) error { _, err := e.b.Restore(e.ctx, m, "C2"); return err })
	if e.card("E").OpenChildren != 1 {
		t.Fatal("restore did not count the child again")
	}
	e2 := newEnv(t)
	e2.create("E")
	e2.create("C", parentE)
	writeConfig(t, e2, `{"version":1,"epics":{"wait_for_children":false}}`)
	if c := e2.claim("E", "w", time.Minute); c.ID != "E" {
		t.Fatal(c)
	}
	// The rule is selection's: a claim of an epic folded from the ledger
	// stands whatever the config says (no conflict).
	fresh := newEnv(t)
	fresh.writeLedger(e2.bytes())
	if s := fresh.open(); s.held().NumConflicts() != 0 {
		t.Fatalf("conflicts: %v", s.held().Conflicts())
	}
}

// TestEpicAutoClose: with epics.auto_close the completion of the last open
// child completes the epic in an event of its own by the same actor, and
// its parent after it; a folded auto-close whose rule no longer holds (a
// child added meanwhile) is a conflict, so every clone agrees.
func TestEpicAutoClose(t *testing.T) {
	e := newEnv(t)
	e.create("P")
	e.create("E", func(r *CreateRequest) { r.Parent = "P" })
	e.create("C1", parentE)
	e.create("C2", parentE)
	writeConfig(t, e, `{"version":1,"epics":{"auto_close":true}}`)
	must2(e, doLease(OpComplete, "C1", "", 0))
	if e.card("E").Status != StatusReady {
		t.Fatal("epic closed with a child open")
	}
	n := len(e.events())
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: Mutation{Actor: "alice"}, ID: "C2"}); err != nil {
		t.Fatal(err)
	}
	evs := e.events()[n:]
	if len(evs) != 3 || evs[1].Op != OpComplete || evs[1].Card != "E" || evs[1].To != "C2" || evs[1].Actor != "alice" || evs[1].V != 3 ||
		evs[2].Card != "P" || evs[2].To != "E" {
		t.Fatalf("events after the last child: %+v", evs)
	}
	if e.card("E").Status != StatusDone || e.card("P").Status != StatusDone {
		t.Fatal("epics not done")
	}
	// A child created under E before the auto-close folds first: the
	// auto-close is refused, the same on every clone.
	s := fold.Fold([]*Event{
		{ID: "1", At: t0, Op: OpCreate, Card: "E", Fields: &Fields{Title: strp("e")}},
		{ID: "2", At: t0.Add(1), Op: OpCreate, Card: "C", Fields: &Fields{Title: strp("c"), Parent: strp("E")}},
		{ID: "3", At: t0.Add(2), Op: OpComplete, Card: "C"},
		{ID: "4", At: t0.Add(3), Op: OpCreate, Card: "D", Fields: &Fields{Title: strp("d"), Parent: strp("E")}},
		{ID: "5", At: t0.Add(4), Op: OpComplete, Card: "E", To: "C"},
	})
	if c, _ := s.Card("E"); c.Status != StatusReady || len(s.Conflicts()) != 1 {
		t.Fatalf("epic %s, conflicts %v", c.Status, s.Conflicts())
	}
	// Without auto_close the epic waits for its closing work.
	e2 := newEnv(t)
	e2.create("E")
	e2.create("C", parentE)
	must2(e2, doLease(OpComplete, "C", "", 0))
	if c := e2.card("E"); c.Status != StatusReady || !e2.claimable("E") {
		t.Fatal("epic not claimable after its last child")
	}
}

func (e *env) claimable(id string) (ok bool) {
	e.t.Helper()
	if err := e.b.view(func(s *fold.State, now time.Time) error { ok = s.Claimable(id, now); return nil }); err != nil {
		e.t.Fatal(err)
	}
	return ok
}

// TestHandoffFences: after a handoff the old holder is fenced, the new one
// holds at the next epoch with progress and checkpoint kept; a handoff
// racing a claim after expiry resolves by the fold's order.
func TestHandoffFences(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.claim("A", "a", time.Minute)
	p := 40
	if _, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "a", Epoch: 1, Progress: &p, Checkpoint: []byte(`{"step":2}`)}); err != nil {
		t.Fatal(err)
	}
	c, err := e.b.Handoff(e.ctx, HandoffRequest{Mutation: m, ID: "A", Owner: "a", Epoch: 1, To: "b", TTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if c.ClaimOwner != "b" || c.ClaimEpoch != 2 || c.Attempts != 1 || *c.Progress != 40 || string(c.Checkpoint) != `{"step":2}` ||
		c.LeaseExpiresAt.Sub(*c.ClaimedAt) != 5*time.Minute {
		t.Fatalf("after handoff: %+v", c)
	}
	e.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "a", Epoch: 1})
		return err
	})
	e.unchanged(ErrFenced, doLease(OpComplete, "A", "a", 1))
	must2(e, doLease(OpComplete, "A", "b", 2))

	// Racing an expiry: a's lease runs out; c claims; a's handoff is fenced.
	e2 := newEnv(t)
	e2.create("A")
	e2.claim("A", "a", time.Minute)
	e2.clk.Advance(2 * time.Minute)
	e2.claim("A", "c", time.Minute)
	e2.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Handoff(e.ctx, HandoffRequest{Mutation: m, ID: "A", Owner: "a", Epoch: 1, To: "b"})
		return err
	})
	// Merged the other way round: the handoff first, then a claim that
	// expected the expired lease's version is a conflict.
	s := fold.Fold([]*Event{
		{ID: "1", At: t0, Op: OpCreate, Card: "A", Fields: &Fields{Title: strp("a")}},
		{ID: "2", At: t0.Add(time.Second), Op: OpClaim, Card: "A", Owner: "a", TTLSeconds: 60, ExpectVersion: 1, Epoch: 1},
		{ID: "3", At: t0.Add(2 * time.Minute), Op: wire.OpHandoff, Card: "A", Owner: "a", Epoch: 1, To: "b"},
		{ID: "4", At: t0.Add(2*time.Minute + 1), Op: OpClaim, Card: "A", Owner: "c", TTLSeconds: 60, ExpectVersion: 2, Epoch: 2},
	})
	if c, _ := s.Card("A"); c.ClaimOwner != "b" || c.ClaimEpoch != 2 || len(s.Conflicts()) != 1 {
		t.Fatalf("owner %s epoch %d conflicts %v", c.ClaimOwner, c.ClaimEpoch, s.Conflicts())
	}
}

// TestDeleteForce: --force unlinks the cards that name the deleted one, in
// the same write; the card leaves lists and the ready queue, and restore
// brings it back.
func TestDeleteForce(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.create("B", func(r *CreateRequest) { r.DependsOn = []string{"A"}; r.Parent = "A" })
	e.create("C")
	must2(e, doTyped(OpLink, "C", "A", LinkSupersedes))
	must2(e, doTyped(OpLink, "C", "A", wire.LinkRelated))
	err := e.unchanged(ErrConflict, func(e *env) error {
		_, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "A"})
		return err
	})
	if !strings.Contains(err.Error(), "B (blocks), B (parent), C (supersedes)") {
		t.Fatal(err)
	}
	n := len(e.events())
	if _, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "A", Reason: "dup", Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := len(e.events()) - n; got != 4 {
		t.Fatalf("force appended %d events", got)
	}
	if b := e.card("B"); len(b.DependsOn) != 0 || b.Parent != "" {
		t.Fatalf("B: %+v", b)
	}
	if c := e.card("C"); !reflect.DeepEqual(c.Links, []Link{{Type: wire.LinkRelated, To: "A"}}) {
		t.Fatalf("C links %v", c.Links)
	}
	list, _ := e.b.List(Filter{}, SortID)
	ready, _ := e.b.Ready(Filter{})
	for _, c := range append(list, ready...) {
		if c.ID == "A" {
			t.Fatal("a deleted card is listed")
		}
	}
	if st, _ := e.b.Stats(); st.Cards != 2 || st.Deleted != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := e.b.Restore(e.ctx, m, "A"); err != nil {
		t.Fatal(err)
	}
	if ready, _ := e.b.Ready(Filter{}); len(ready) != 3 {
		t.Fatalf("after restore ready %d", len(ready))
	}
}

// TestV2SnapshotCountsChildren: a snapshot written before the fold kept
// counts of open children is read with them derived.
func TestV2SnapshotCountsChildren(t *testing.T) {
	e := newEnv(t)
	e.create("E")
	e.create("C", parentE)
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, SnapshotFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite it as v2 would have: header v2, no open_children.
	var out []byte
	for i, l := range splitLines(data) {
		body, err := wire.CheckFrame(l)
		if err != nil {
			t.Fatal(err)
		}
		s := string(body[:bytes.LastIndex(body, []byte(`,"crc":"`))]) + "}" // the object without its crc
		if i == 0 {
			s = strings.Replace(s, fmt.Sprintf(`{"v":%d,`, FormatVersion), `{"v":2,`, 1)
		}
		s = strings.Replace(s, `,"open_children":1`, "", 1)
		out = append(out, frame(s)...)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if c := e.open().held().Find("E"); c.OpenChildren != 1 {
		t.Fatalf("open children from a v2 snapshot: %d", c.OpenChildren)
	}
	if e.claimable("E") {
		t.Fatal("epic claimable")
	}
}

// TestChildWaitingOnItsEpic: a child that depends on its own epic does not
// hold the epic back (each would wait for the other for good); once the
// link goes, it does.
func TestChildWaitingOnItsEpic(t *testing.T) {
	e := newEnv(t)
	e.create("E")
	e.create("C", func(r *CreateRequest) { r.Parent = "E"; r.DependsOn = []string{"E"} })
	if !e.claimable("E") || e.card("E").OpenChildren != 0 {
		t.Fatal("a child waiting on its epic holds it back")
	}
	must2(e, doUnlink("C", "E"))
	if e.claimable("E") || e.card("E").OpenChildren != 1 {
		t.Fatal("the child no longer waiting on its epic does not hold it back")
	}
	must2(e, doTyped(OpLink, "C", "E", LinkDuplicates))
	if !e.claimable("E") {
		t.Fatal("a child duplicating its epic holds it back")
	}
}
