package gitsync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

func claimAndComplete(t *testing.T, s *Syncer, b *ledger.Backlog, owner, id string) {
	t.Helper()
	c, _, err := s.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, Owner: owner, ID: id, TTL: time.Hour})
	if err != nil || c == nil {
		t.Fatalf("%s claims %s: %v %v", owner, id, c, err)
	}
	if _, _, err := s.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: owner, RequestID: rid}, ID: id, Owner: owner, Epoch: c.ClaimEpoch})
	}); err != nil {
		t.Fatalf("%s completes %s: %v", owner, id, err)
	}
}

// The lease refs of done cards are retired: after 10 cards claimed and
// completed through the remote, in batches of 4 (two retirements, as 40
// cards make in batches of 16), the remote holds fewer lease refs than
// one retirement batch, plus one retirement ref, and every clone still
// folds all 10 done.
func TestDoneCardsLeaseRefsAreRetired(t *testing.T) {
	const n = 10
	old := retireBatch
	retireBatch = 4
	t.Cleanup(func() { retireBatch = old })
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	var ids []string
	for i := range n {
		ids = append(ids, "C"+string(rune('A'+i/26))+string(rune('a'+i%26)))
	}
	create(t, a, "seed", ids...)
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	push(t, sa)
	for _, id := range ids {
		claimAndComplete(t, syncer(t, a, Options{Remote: "origin", Actor: "alice"}), a, "alice", id)
	}
	leases := strings.Fields(w.git(w.bare, "for-each-ref", "--format=%(refname)", "refs/bl/leases/"))
	retired := strings.Fields(w.git(w.bare, "for-each-ref", "--format=%(refname)", "refs/bl/retired/"))
	if len(leases) >= retireBatch || len(retired) != 1 {
		t.Fatalf("%d lease refs and %d retirement refs after %d done cards", len(leases), len(retired), n)
	}
	got := cards(t, w.freshClone("plain"))
	if done := strings.Count(got, " done #1 v3"); done != n {
		t.Fatalf("the branch folds %d done cards:\n%s", done, got)
	}
}

// A claimer whose fetch is older than a retirement re-creates the retired
// card's lease ref (its compare-and-swap expects "no ref"): the claim is
// never acknowledged, and the card stays done by the one who won it.
func TestStaleClaimerDoesNotWinARetiredCard(t *testing.T) {
	old := retireBatch
	retireBatch = 1
	t.Cleanup(func() { retireBatch = old })
	w := newWorld(t)
	dx, dy := w.clone("x"), w.clone("y")
	x, y := open(t, dx), open(t, dy)
	create(t, x, "seed", "C0", "C1")
	sx := syncer(t, x, Options{Remote: "origin", Actor: "xavier"})
	push(t, sx)
	// A first lease ref makes the retirement ref.
	if c, _, err := sx.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "xavier"}, Owner: "xavier", ID: "C0", TTL: time.Hour}); err != nil || c == nil {
		t.Fatal(c, err)
	}
	sy := syncer(t, y, Options{Remote: "origin", Actor: "yves"})
	if _, err := sy.Pull(bg); err != nil {
		t.Fatal(err)
	}
	sx.beforeLeasePush = func(card string, round int) {
		if round == 1 { // yves claims, completes, and the ref is retired
			claimAndComplete(t, sy, y, "yves", card)
			// A complete that goes out without a fetch retires nothing;
			// yves's next call through the remote (a claim that finds
			// nothing) does.
			if c, _, err := sy.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "yves"}, Owner: "yves", TTL: time.Hour}); c != nil || err != nil {
				t.Errorf("yves's second claim: %v %v", c, err)
			}
			if refs := w.git(w.bare, "for-each-ref", sy.leasePrefix+card); refs != "" {
				t.Errorf("not retired: %s", refs)
			}
		}
	}
	c, _, err := sx.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "xavier"}, Owner: "xavier", ID: "C1", TTL: time.Hour})
	if c != nil || !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("the stale claimer got %+v, %v; want a conflict and no card", c, err)
	}
	push(t, sy)
	if got := cards(t, w.freshClone("plain")); got != "C0 claimed xavier#1 v2\nC1 done #1 v3\n" {
		t.Fatalf("the branch folds:\n%s", got)
	}
}
