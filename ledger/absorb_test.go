package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A clone takes in a card's lease events written by another clone, stamps
// and all, and its own next write on the card folds after them: the two
// clones' ledgers then merge (a union of lines) to the same card.
func TestAbsorbTakesForeignLeaseEvents(t *testing.T) {
	a := newEnv(t)
	a.create("A1")
	a.create("A2")
	b := &env{t: t, dir: t.TempDir(), clk: a.clk, ctx: a.ctx}
	copyDir(t, a.dir, b.dir)
	b.b = b.open()

	before := len(a.lines())
	a.clk.Advance(time.Second)
	a.claim("A1", "w-a", time.Minute)
	if _, err := a.b.Release(a.ctx, LeaseRequest{Mutation: rid("r1"), ID: "A1", Owner: "w-a", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	foreign := bytes.Join(a.lines()[before:], nil)

	// b wrote meanwhile, later than a's lines: they land out of order.
	b.clk.Advance(time.Second)
	if _, err := b.b.Update(b.ctx, UpdateRequest{Mutation: m, ID: "A2", Fields: Fields{Title: strp("later")}}); err != nil {
		t.Fatal(err)
	}
	n, err := b.b.Absorb(b.ctx, foreign)
	if err != nil || n != 2 {
		t.Fatalf("Absorb = %d, %v; want 2 events", n, err)
	}
	if n, err := b.b.Absorb(b.ctx, foreign); err != nil || n != 0 {
		t.Fatalf("Absorb again = %d, %v; want nothing new", n, err)
	}
	if c := b.card("A1"); c.ClaimEpoch != 1 || c.Status != StatusReady {
		t.Fatalf("after absorbing: %s epoch %d, want ready at epoch 1", c.Status, c.ClaimEpoch)
	}
	c, err := b.b.Claim(b.ctx, ClaimRequest{Mutation: m, ID: "A1", Owner: "w-b", TTL: time.Minute})
	if err != nil || c.ClaimEpoch != 2 {
		t.Fatalf("claim after absorbing: %+v, %v", c, err)
	}
	// The union of both ledgers folds the claim as b was told.
	union := append(a.bytes(), b.bytes()...)
	if err := os.WriteFile(filepath.Join(a.dir, LedgerFile), union, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := a.open(); true {
		c, err := got.Get("A1")
		if err != nil || c.ClaimOwner != "w-b" || c.ClaimEpoch != 2 || got.held().NumConflicts() != 0 {
			t.Fatalf("merged: %+v, %v, %d conflicts", c, err, got.held().NumConflicts())
		}
	}
}

// A line that does not read as an event is refused, and nothing is appended.
func TestAbsorbRefusesDamage(t *testing.T) {
	e := newEnv(t)
	e.create("A1")
	e.unchanged(ErrCorrupt, func(e *env) error {
		_, err := e.b.Absorb(e.ctx, []byte("{\"not\":\"an event\"}\n"))
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err = %v", err)
		}
		return err
	})
}

// A claim an arbiter decided names no card version: a note another clone
// wrote on the card and had not synced when the claim was made does not
// refuse it when the two clones' ledgers merge. A claim a clone decided
// alone still compares the version.
func TestArbitratedClaimIgnoresUnsyncedEdits(t *testing.T) {
	for _, arbitrated := range []bool{true, false} {
		a := newEnv(t)
		a.create("A1")
		b := &env{t: t, dir: t.TempDir(), clk: a.clk, ctx: a.ctx}
		copyDir(t, a.dir, b.dir)
		b.b = b.open()
		if _, err := a.b.Note(a.ctx, NoteRequest{Mutation: m, ID: "A1", Text: "seen only here"}); err != nil {
			t.Fatal(err)
		}
		a.clk.Advance(time.Second)
		c, err := b.b.Claim(b.ctx, ClaimRequest{Mutation: m, ID: "A1", Owner: "w-b", TTL: time.Minute, Arbitrated: arbitrated})
		if err != nil || c == nil {
			t.Fatalf("claim: %v", err)
		}
		union := append(a.bytes(), b.bytes()...)
		if err := os.WriteFile(filepath.Join(a.dir, LedgerFile), union, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := a.open().Get("A1")
		if err != nil {
			t.Fatal(err)
		}
		if won := got.ClaimOwner == "w-b"; won != arbitrated {
			t.Fatalf("arbitrated=%v: after the merge the card is %s held by %q", arbitrated, got.Status, got.ClaimOwner)
		}
	}
}
