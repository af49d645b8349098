package gitsync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// A claim whose push loses to a clone that claimed the same card is voided
// by the pull that follows; the claimer moves on to the next card, and only
// that one is acknowledged.
func TestClaimVoidedMovesOn(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1", "C2")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	sa.beforePush = func(round int) {
		if round == 1 { // bob claims C1 and pushes first
			if c, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, Owner: "bob", TTL: time.Hour}); err != nil || c == nil || c.ID != "C1" {
				t.Errorf("bob's claim: %v %v", c, err)
			}
		}
	}
	card, res, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if card == nil || card.ID != "C2" || card.ClaimOwner != "alice" || res.Tries != 2 {
		t.Fatalf("alice got %+v after %d tries", card, res.Tries)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got := cards(t, b); got != "C1 claimed bob#1 v2\nC2 claimed alice#1 v2\n" {
		t.Fatalf("remote state:\n%s", got)
	}
	var conflicts []ledger.Conflict
	_ = b.View(func(s *ledger.State, _ time.Time) error { conflicts = s.Conflicts(); return nil })
	if len(conflicts) != 1 || conflicts[0].Card != "C1" || conflicts[0].Op != ledger.OpClaim {
		t.Fatalf("conflicts %+v", conflicts)
	}
	// Nothing left: nil, nothing pushed.
	card, _, err = sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card != nil {
		t.Fatalf("%v %v", card, err)
	}
}

// A heartbeat pushed after the lease was taken over on the remote is
// fenced: the push is rejected, the pull voids it, exit code 4 territory.
func TestHeartbeatFencedAfterRejectedPush(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	sa.beforePush = func(round int) {
		if round != 1 {
			return
		}
		if _, err := b.Reclaim(bg, ledger.ReclaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, ID: "C1", Reason: "gone"}); err != nil {
			t.Error(err)
		}
		if _, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, Owner: "bob", ID: "C1", TTL: time.Hour}); err != nil {
			t.Error(err)
		}
	}
	_, _, err = sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch})
	})
	if !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("want ErrFenced, got %v", err)
	}
	if got := cards(t, a); got != "C1 claimed bob#2 v4\n" {
		t.Fatalf("state:\n%s", got)
	}
}

// A remote claim that fails on its last round is not withdrawn by a local
// release: a voided claim has the same epoch as the claim that beat it, so
// when both clones use the same owner name (agent-1 on every box), a
// release fenced only by (owner, epoch) would, once synced, release the
// lease the other clone was acknowledged for.
func TestFailedRemoteClaimLeavesTheWinnersLease(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "box-a"})
	sb := syncer(t, b, Options{Remote: "origin", Actor: "box-b", Tries: 1})
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	var won *ledger.Card
	sb.beforePush = func(round int) {
		// Box A claims C1 and its push lands first.
		c, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "box-a"}, Owner: "agent-1", TTL: time.Hour})
		if err != nil || c == nil {
			t.Errorf("box A: %v %v", c, err)
		}
		won = c
	}
	// Box B's only round is rejected: its claim is withdrawn locally.
	if c, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "box-b"}, Owner: "agent-1", TTL: time.Hour}); err == nil {
		t.Fatalf("box B's claim should have failed, got %+v", c)
	}
	if won == nil || won.ID != "C1" || won.ClaimEpoch != 1 {
		t.Fatalf("box A was told %+v", won)
	}
	// Box B's next ordinary sync carries the withdrawal to the remote.
	sb.beforePush = nil
	if _, err := sb.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Pull(bg); err != nil {
		t.Fatal(err)
	}
	got := cards(t, a)
	if want := "C1 claimed agent-1#1 v2\n"; !strings.HasPrefix(got, "C1 claimed agent-1#1 ") {
		t.Fatalf("box A was acknowledged C1 at epoch 1, but the remote now folds to:\n%s(want %s)", got, want)
	}
}

// TestRemoteClaimOnADivergedBranchWritesNothing: when the remote branch
// holds code commits the checked-out branch lacks, a claim through the
// remote fails with ErrDiverged before it claims anything locally: no
// event that nobody was told of holds the card.
func TestRemoteClaimOnADivergedBranchWritesNothing(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin"}), syncer(t, b, Options{Remote: "origin"})
	create(t, a, "alice", "A1")
	pushCodeFromB(t, w, sa, sb, db)

	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if !errors.Is(err, ErrDiverged) || card != nil {
		t.Fatalf("claim on a diverged branch: card %v, err %v; want ErrDiverged", card, err)
	}
	got := cards(t, a)
	if strings.Contains(got, "alice") {
		t.Fatalf("the failed claim left a claim behind:\n%s", got)
	}
	_, _, err = sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		t.Fatal("a lease call on a diverged branch ran its local write")
		return ledger.Card{}, nil
	})
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("lease on a diverged branch: %v; want ErrDiverged", err)
	}
}
