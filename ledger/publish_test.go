package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// stageClaim stages a claim of id by owner through e.b and checks that
// nothing was appended.
func stageClaim(e *env, id, owner, requestID string) *Staged {
	e.t.Helper()
	before := e.bytes()
	w, err := e.b.Stage(e.ctx, func(*State, *Staged) error { return nil }, func(ctx context.Context) error {
		_, err := e.b.Claim(ctx, ClaimRequest{Mutation: Mutation{Actor: owner, RequestID: requestID}, ID: id, Owner: owner, TTL: time.Hour})
		return err
	})
	if err != nil || w == nil || len(w.Events) != 1 || w.Events[0].Op != OpClaim {
		e.t.Fatalf("stage: %+v %v", w, err)
	}
	if !bytes.Equal(e.bytes(), before) {
		e.t.Fatal("a staged write was appended")
	}
	return w
}

// A staged write is appended in place when nothing came after it; a
// replay stages nothing and answers as the first call did.
func TestAppendStagedInPlace(t *testing.T) {
	e := newEnv(t)
	e.create("C1")
	w := stageClaim(e, "C1", "alice", "r1")
	cards, err := e.b.AppendStaged(e.ctx, w)
	if err != nil || len(cards) != 1 || cards[0].ClaimOwner != "alice" {
		t.Fatalf("%+v %v", cards, err)
	}
	if got := e.lastEvent(); got.ID != w.Events[0].ID {
		t.Fatalf("last event %s, want the staged %s", got.ID, w.Events[0].ID)
	}
	// Answered as it stands, appended once.
	n := len(e.events())
	if cards, err := e.b.AppendStaged(e.ctx, w); err != nil || len(cards) != 1 || cards[0].ClaimOwner != "alice" || len(e.events()) != n {
		t.Fatalf("again: %+v %v, %d events (want %d)", cards, err, len(e.events()), n)
	}
	again, err := e.b.Stage(e.ctx, func(*State, *Staged) error { t.Fatal("a replay was checked"); return nil }, func(ctx context.Context) error {
		_, err := e.b.Claim(ctx, ClaimRequest{Mutation: Mutation{Actor: "alice", RequestID: "r1"}, ID: "C1", Owner: "alice", TTL: time.Hour})
		return err
	})
	if err != nil || again != nil {
		t.Fatalf("replay staged %+v, %v", again, err)
	}
}

// A staged write is refused, appending nothing, once another write came
// after its stamp, or once it no longer checks against an earlier one.
func TestAppendStagedRefusedWhenMoved(t *testing.T) {
	e := newEnv(t)
	e.create("C1")
	e.clk.Advance(time.Second)
	w := stageClaim(e, "C1", "alice", "r1")
	e.clk.Advance(time.Second)
	if _, _, err := e.open().Create(e.ctx, CreateRequest{Mutation: m, ID: "C2", Title: "after"}); err != nil {
		t.Fatal(err)
	}
	n := len(e.events())
	if _, err := e.b.AppendStaged(e.ctx, w); !errors.Is(err, ErrStageMoved) || len(e.events()) != n {
		t.Fatalf("after a later write: %v, %d events (want %d)", err, len(e.events()), n)
	}

	e.clk.Advance(time.Minute)
	w = stageClaim(e, "C1", "alice", "r2")
	e.clk.Advance(-30 * time.Second) // bob's claim is stamped before alice's
	if _, err := e.open().Claim(e.ctx, ClaimRequest{Mutation: m, ID: "C1", Owner: "bob", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !e.lastEvent().Before(w.Events[0]) {
		t.Fatal("bob's claim is not stamped before alice's staged one")
	}
	n = len(e.events())
	if _, err := e.b.AppendStaged(e.ctx, w); !errors.Is(err, ErrStageMoved) || !errors.Is(err, ErrConflict) || len(e.events()) != n {
		t.Fatalf("a write that no longer checks: %v, %d events (want %d)", err, len(e.events()), n)
	}
	if c := e.card("C1"); c.ClaimOwner != "bob" {
		t.Fatalf("C1: %+v", c)
	}
}

// A stage belongs to its call, not to the handle: while one goroutine
// stages claims through a shared handle, another's writes through it
// append as usual, each caller collects only its own appended events, and
// every stage holds its own claim.
func TestStageIsPerCall(t *testing.T) {
	e := newEnv(t)
	e.create("C1")
	const rounds = 200
	var wg sync.WaitGroup
	var staged []*Staged
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range rounds {
			w, err := e.b.Stage(e.ctx, func(*State, *Staged) error { return nil }, func(ctx context.Context) error {
				_, err := e.b.Claim(ctx, ClaimRequest{Mutation: Mutation{Actor: "alice", RequestID: fmt.Sprintf("s%d", i)}, ID: "C1", Owner: "alice", TTL: time.Hour})
				return err
			})
			if err != nil {
				t.Errorf("stage %d: %v", i, err)
				return
			}
			staged = append(staged, w)
		}
	}()
	var mine []*Event
	go func() {
		defer wg.Done()
		ctx := OnAppended(e.ctx, func(evs []*Event) { mine = append(mine, evs...) })
		for i := range rounds {
			if _, _, err := e.b.Create(ctx, CreateRequest{Mutation: m, ID: fmt.Sprintf("N%d", i), Title: "meanwhile"}); err != nil {
				t.Errorf("create N%d: %v", i, err)
				return
			}
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, w := range staged {
		if w == nil || len(w.Events) != 1 || w.Events[0].Op != OpClaim || w.Events[0].Card != "C1" {
			t.Fatalf("stage %d holds %+v, want its claim of C1", i, w)
		}
	}
	if len(mine) != rounds {
		t.Fatalf("the creating caller collected %d events, want its %d", len(mine), rounds)
	}
	for _, ev := range mine {
		if ev.Op != OpCreate {
			t.Fatalf("the creating caller collected a %s of %s", ev.Op, ev.Card)
		}
	}
	if c := e.card("C1"); c.Status != StatusReady {
		t.Fatalf("C1 is %s: a staged claim was appended", c.Status)
	}
}
