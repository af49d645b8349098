package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// A remote claim whose earlier epochs the branch does not hold yet (its
// claimer took and released the card with --local and has not pushed)
// is acknowledged: the fold of another clone cannot take it in yet, but
// that clone must not claim the card through the remote over it, which
// would give one card to two acknowledged remote claims.
func TestRemoteClaimAheadOfTheBranchIsNotClaimedOver(t *testing.T) {
	remoteClaimAheadOfTheBranch(t, false)
}

// The same once the claimer's own next lease write, made after its clone
// set the claim aside too, has replaced the tip: the tip keeps the claim.
func TestRemoteClaimAheadOfTheBranchStaysOnItsTip(t *testing.T) {
	remoteClaimAheadOfTheBranch(t, true)
}

func remoteClaimAheadOfTheBranch(t *testing.T, heartbeatFirst bool) {
	w := newWorld(t)
	dc, da := w.clone("carol"), w.clone("alice")
	c := open(t, dc)
	create(t, c, "seed", "C1")
	sc := syncer(t, c, Options{Remote: "origin", Actor: "carol"})
	push(t, sc)
	a, ws := openWarned(t, da)
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice", Tries: 3})
	if _, err := sa.Pull(bg); err != nil {
		t.Fatal(err)
	}

	mut := ledger.Mutation{Actor: "carol"}
	if _, err := c.Claim(bg, ledger.ClaimRequest{Mutation: mut, Owner: "carol", ID: "C1", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Release(bg, ledger.LeaseRequest{Mutation: mut, ID: "C1", Owner: "carol", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	// main takes no direct push (a protected branch); lease refs do.
	hook := "#!/bin/sh\nwhile read old new ref; do [ \"$ref\" = refs/heads/main ] && { echo 'main is protected' >&2; exit 1; }; done\nexit 0\n"
	if err := os.WriteFile(filepath.Join(w.bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	won, _, err := sc.Claim(bg, ledger.ClaimRequest{Mutation: mut, Owner: "carol", ID: "C1", TTL: time.Hour})
	if err != nil || won == nil || won.ClaimEpoch != 2 {
		t.Fatalf("carol's remote claim: %v %v", won, err)
	}

	if heartbeatFirst {
		// Carol's clone loses its cache, judges her own claim again (it
		// is set aside, as in any other clone), and heartbeats.
		if err := os.Remove(filepath.Join(c.Dir(), ledger.CacheDir, "leaselines")); err != nil {
			t.Fatal(err)
		}
		s := syncer(t, c, Options{Remote: "origin", Actor: "carol"})
		if _, _, err := s.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
			return c.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "carol", RequestID: rid}, ID: "C1", Owner: "carol", Epoch: 2})
		}); err != nil {
			t.Fatalf("carol's heartbeat: %v", err)
		}
	}
	// The second try is a new handle: the judgement comes from the cache.
	for _, s := range []*Syncer{sa, syncer(t, a, Options{Remote: "origin", Actor: "alice", Tries: 3})} {
		got, _, err := s.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", ID: "C1", TTL: time.Hour})
		if err == nil && got != nil {
			t.Fatalf("alice's remote claim won %s at epoch %d over carol's acknowledged claim at epoch 2 (warnings: %s)", got.ID, got.ClaimEpoch, ws.all())
		}
	}
	if tip := w.git(w.bare, "log", "-1", "--format=%B", sc.leasePrefix+"C1"); !strings.Contains(tip, `"carol"`) {
		t.Fatalf("the lease ref lost carol's claim:\n%s", tip)
	}
}

// A local claim that reaches the branch by a plain git push, stamped after
// an acknowledged remote claim of the same card, folds as a conflict: the
// acknowledged claim stands (docs/SYNC.md). Its owner's heartbeats through
// the remote stand too, in every clone: judged against the branch, where
// the local claim was folded before the remote claim it comes after, they
// looked like another owner's and were set aside.
func TestHeartbeatOfAnAcknowledgedClaimAfterAPlainPushOfALocalClaim(t *testing.T) {
	w := newWorld(t)
	da, db, dc := w.clone("alice"), w.clone("bob"), w.clone("carol")
	a := open(t, da)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	push(t, sa)
	b := open(t, db)
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	c, ws := openWarned(t, dc)
	if _, err := syncer(t, c, Options{Remote: "origin", Actor: "carol"}).Pull(bg); err != nil {
		t.Fatal(err)
	}

	won, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", ID: "C1", TTL: time.Hour})
	if err != nil || won == nil || won.ClaimEpoch != 1 {
		t.Fatalf("alice's remote claim: %v %v", won, err)
	}
	// Bob claims with --local after it, and pushes with plain git.
	if _, err := b.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, Owner: "bob", ID: "C1", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	w.git(db, "add", "-A", ".backlog")
	w.git(db, "commit", "-qm", "bob claims C1")
	w.git(db, "push", "-q", "origin", "HEAD:main")

	if _, _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: 1})
	}); err != nil {
		t.Fatalf("alice's heartbeat: %v", err)
	}
	if _, err := syncer(t, c, Options{Remote: "origin", Actor: "carol"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	want := cards(t, a)
	if !strings.HasPrefix(want, "C1 claimed alice#1") {
		t.Fatalf("alice folds:\n%s", want)
	}
	if got := cards(t, c); got != want || strings.Contains(ws.all(), "set aside") {
		t.Fatalf("carol folds:\n%swhere alice folds:\n%swarnings: %s", got, want, ws.all())
	}
}
