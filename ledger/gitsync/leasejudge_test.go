package gitsync

import (
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
