package gitsync

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/lock"
)

// A claim whose lease push loses to a clone that claimed the same card
// first leaves nothing behind on either side: no local event, no conflict
// on the remote. The claimer moves on to another card, and only that one
// is acknowledged.
func TestLostLeaseRaceLeavesNothing(t *testing.T) {
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
	var first string
	sa.beforeLeasePush = func(card string, round int) {
		if round == 1 { // bob claims the same card and his push lands first
			first = card
			if c, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, Owner: "bob", ID: card, TTL: time.Hour}); err != nil || c == nil {
				t.Errorf("bob's claim: %v %v", c, err)
			}
		}
	}
	card, res, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if card == nil || card.ID == first || card.ClaimOwner != "alice" || res.Tries != 2 {
		t.Fatalf("alice got %+v after %d tries; bob took %s", card, res.Tries, first)
	}
	for _, s := range []*Syncer{sb, sa} {
		if _, err := s.Push(bg, Hooks{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{first: "bob", card.ID: "alice"}
	for _, bl := range []*ledger.Backlog{a, b} {
		got := cards(t, bl)
		for id, owner := range want {
			if !strings.Contains(got, id+" claimed "+owner+"#1 v2\n") {
				t.Fatalf("state:\n%s", got)
			}
		}
		var conflicts []ledger.Conflict
		_ = bl.View(func(s *ledger.State, _ time.Time) error { conflicts = s.Conflicts(); return nil })
		if len(conflicts) != 0 {
			t.Fatalf("the lost race left conflicts %+v", conflicts)
		}
	}
	if n := len(eventIDs(t, a)); n != 4 {
		t.Fatalf("%d events, want 4 (two creates, two claims)", n)
	}
	// Nothing left: nil.
	card, _, err = sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card != nil {
		t.Fatalf("%v %v", card, err)
	}
}

// Claims of different cards do not contend: a claim whose card's lease ref
// did not move lands in one round although another clone's claim of
// another card landed meanwhile.
func TestClaimsOfDifferentCardsDoNotContend(t *testing.T) {
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
	other := map[string]string{"C1": "C2", "C2": "C1"}
	sa.beforeLeasePush = func(card string, round int) {
		if round == 1 {
			if c, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, Owner: "bob", ID: other[card], TTL: time.Hour}); err != nil || c == nil {
				t.Errorf("bob's claim: %v %v", c, err)
			}
		}
	}
	card, res, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil || res.Tries != 1 {
		t.Fatalf("alice got %+v after %d tries: %v", card, res.Tries, err)
	}
	// The next sync carries both claims to the branch: a plain clone sees
	// them.
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	dc := filepath.Join(w.root, "plain")
	w.git(w.root, "clone", "-q", w.bare, dc)
	if got := cards(t, open(t, dc)); got != "C1 claimed "+map[string]string{"C1": "alice", "C2": "bob"}[card.ID]+"#1 v2\nC2 claimed "+map[string]string{"C2": "alice", "C1": "bob"}[card.ID]+"#1 v2\n" {
		t.Fatalf("a plain clone of the branch:\n%s", got)
	}
	if refs := w.git(w.bare, "for-each-ref", "--format=%(refname)", "refs/bl/leases/"); refs != sa.leasePrefix+"C1\n"+sa.leasePrefix+"C2\n" {
		t.Fatalf("lease refs:\n%s", refs)
	}
}

// A heartbeat whose lease push loses to a clone that took the card over
// is fenced by the round that follows, and writes nothing.
func TestHeartbeatFencedAfterLostLeasePush(t *testing.T) {
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
	sa.beforeLeasePush = func(_ string, round int) {
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

// A remote claim whose every round lost writes nothing: the winner's lease
// stands when the loser syncs later, even under the same owner name.
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
	sb.beforeLeasePush = func(card string, round int) {
		// Box A claims C1 and its push lands first.
		c, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "box-a"}, Owner: "agent-1", TTL: time.Hour})
		if err != nil || c == nil {
			t.Errorf("box A: %v %v", c, err)
		}
		won = c
	}
	if c, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "box-b"}, Owner: "agent-1", TTL: time.Hour}); err == nil {
		t.Fatalf("box B's claim should have failed, got %+v", c)
	}
	if won == nil || won.ID != "C1" || won.ClaimEpoch != 1 {
		t.Fatalf("box A was told %+v", won)
	}
	if strings.Contains(cards(t, b), "agent-1") {
		t.Fatalf("box B's lost claim was written:\n%s", cards(t, b))
	}
	sb.beforeLeasePush = nil
	if _, err := sb.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got := cards(t, a); got != "C1 claimed agent-1#1 v2\n" {
		t.Fatalf("box A was acknowledged C1 at epoch 1, but the remote now folds to:\n%s", got)
	}
}

// hookRemote makes the bare remote's pre-receive hook refuse every push
// with a message, or (refuse false) removes it.
func hookRemote(t *testing.T, w *world, refuse bool) {
	t.Helper()
	path := filepath.Join(w.bare, "hooks", "pre-receive")
	if !refuse {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho 'main is frozen for the release' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A remote complete refused by a hook fails at once with the hook's
// message and writes nothing; the retry, once the hook lets it through,
// succeeds and pushes (it is not told its lease is gone).
func TestRetriedCompleteAfterRefusedPush(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	complete := func() (ledger.Card, Result, error) {
		return sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
			return a.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch})
		})
	}
	hookRemote(t, w, true)
	start := time.Now()
	_, res, err := complete()
	if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "main is frozen for the release") {
		t.Fatalf("want the hook's refusal, got %v", err)
	}
	if res.Tries != 1 || time.Since(start) > 10*time.Second {
		t.Fatalf("a refusal took %d rounds, %s", res.Tries, time.Since(start))
	}
	if got := cards(t, a); got != "C1 claimed alice#1 v2\n" {
		t.Fatalf("the refused complete was written:\n%s", got)
	}
	hookRemote(t, w, false)
	c, res, err := complete()
	if err != nil || c.Status != ledger.StatusDone || !res.Pushed {
		t.Fatalf("retried complete: %+v %+v %v", c, res, err)
	}
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got := cards(t, b); got != "C1 done #1 v3\n" {
		t.Fatalf("the remote holds:\n%s", got)
	}
}

// A complete this clone recorded but never pushed (written with --local,
// or by a bl that wrote before pushing) is pushed by its retry, which
// answers as the first call did.
func TestRetryPushesARecordedComplete(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	req := ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: "done-1"}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch}
	if _, err := a.Complete(bg, req); err != nil {
		t.Fatal(err)
	}
	c, res, err := sa.Lease(bg, "done-1", func(ctx context.Context, rid string) (ledger.Card, error) {
		r := req
		r.RequestID = rid
		return a.Complete(ctx, r)
	})
	if err != nil || c.Status != ledger.StatusDone || !res.Pushed {
		t.Fatalf("retried complete: %+v %+v %v", c, res, err)
	}
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got := cards(t, b); got != "C1 done #1 v3\n" {
		t.Fatalf("the remote holds:\n%s", got)
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

// A remote claim whose wait for the backlog lock runs out (another process
// of this clone holds it, pushing its own write) wrote nothing and tries
// again rather than failing.
func TestRemoteClaimRetriesALockTimeout(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	dir := filepath.Join(da, ".backlog")
	a, err := ledger.Open(dir, ledger.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	lk := lock.New(filepath.Join(dir, ledger.LockFile))
	if err := lk.Acquire(bg, time.Second); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = lk.Release()
	}()
	card, res, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil || card.ID != "C1" || res.Tries < 2 {
		t.Fatalf("claim while the lock was held: %+v %+v %v", card, res, err)
	}
}

// A lease push holds no backlog lock: another process of the same clone
// writes while the push is out (here, with a lock wait of 100 ms). Its
// event comes after the claim's stamp, so the claim cannot be appended in
// place; it comes in from the lease ref by a pull, in order, and is
// acknowledged because the fold applied it. The ledger stays sorted.
func TestLeasePushHoldsNoLock(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1", "C2")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	other, err := ledger.Open(filepath.Join(da, ".backlog"), ledger.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sa.beforeLeasePush = func(card string, round int) {
		if round == 1 {
			if _, _, err := other.Create(bg, ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "carol"}, ID: "C3", Title: "written while the push is out"}); err != nil {
				t.Errorf("a write while the lease push is out: %v", err)
			}
		}
	}
	card, res, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil || card.ClaimOwner != "alice" || res.Tries != 1 {
		t.Fatalf("alice got %+v after %d tries: %v", card, res.Tries, err)
	}
	fresh := open(t, da)
	want := map[string]string{"C1": "C1 ready #0 v1\n", "C2": "C2 ready #0 v1\n", "C3": "C3 ready #0 v1\n"}
	want[card.ID] = card.ID + " claimed alice#1 v2\n"
	if got := cards(t, fresh); got != want["C1"]+want["C2"]+want["C3"] {
		t.Fatalf("state:\n%s", got)
	}
	data, err := os.ReadFile(filepath.Join(da, ".backlog", ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	var prev *ledger.Event
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		e, err := ledger.DecodeLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && !prev.At.Before(e.At) {
			t.Fatalf("ledger out of order: %s at %s, then %s at %s", prev.ID, prev.At, e.ID, e.At)
		}
		prev = e
	}
}

// Two backlogs of one repository each have a card C1, claimed through the
// same remote: their lease refs live apart (leaseNamespace), so each claim
// lands in one round and neither backlog takes in the other's lease.
func TestTwoBacklogsKeepTheirLeases(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	var bls []*ledger.Backlog
	var ss []*Syncer
	for _, d := range []string{"p", "q"} {
		dir := filepath.Join(da, d, ".backlog")
		if _, err := ledger.Init(dir); err != nil {
			t.Fatal(err)
		}
		b, err := ledger.Open(dir, ledger.Options{LockTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		create(t, b, "seed", "C1")
		s := syncer(t, b, Options{Remote: "origin", Actor: "alice"})
		if _, err := s.Push(bg, Hooks{}); err != nil {
			t.Fatal(err)
		}
		bls, ss = append(bls, b), append(ss, s)
	}
	for i, owner := range []string{"pat", "quinn"} {
		card, res, err := ss[i].Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, Owner: owner, ID: "C1", TTL: time.Hour})
		if err != nil || card == nil || res.Tries != 1 {
			t.Fatalf("%s's claim: %+v after %d tries: %v", owner, card, res.Tries, err)
		}
	}
	for i, owner := range []string{"pat", "quinn"} {
		if _, err := ss[i].Push(bg, Hooks{}); err != nil {
			t.Fatal(err)
		}
		if got := cards(t, bls[i]); got != "C1 claimed "+owner+"#1 v2\n" {
			t.Fatalf("backlog %d:\n%s", i, got)
		}
		if n := len(eventIDs(t, bls[i])); n != 2 {
			t.Fatalf("backlog %d holds %d events, want 2 (a create and its own claim)", i, n)
		}
	}
	refs := strings.Fields(w.git(w.bare, "for-each-ref", "--format=%(refname)", "refs/bl/leases/"))
	if len(refs) != 2 || path.Base(refs[0]) != "C1" || path.Base(refs[1]) != "C1" {
		t.Fatalf("lease refs: %q", refs)
	}
}

// The namespace is the one docs/SYNC.md tells a person to compute.
func TestLeaseNamespaceAsDocumented(t *testing.T) {
	if got := leaseNamespace("0123456789abcdef", ".backlog"); got != "1e2c835d98e26d1f" {
		t.Fatalf("leaseNamespace(0123456789abcdef, .backlog) = %s; docs/SYNC.md says printf 'backlog 0123456789abcdef\\n' | sha256sum gives 1e2c835d98e26d1f", got)
	}
	if got := leaseNamespace("", ".backlog"); got != "64f4c66a32e31147" {
		t.Fatalf("leaseNamespace(no id, .backlog) = %s; docs/SYNC.md says printf 'path .backlog\\n' | sha256sum gives 64f4c66a32e31147", got)
	}
}

// Two attempts of one request on one clone at once — a retry started while
// the first is still out — are one request: the retry waits for the first
// and answers as it did, whatever cards each would have picked. Without
// that, each stages its own claim before either is appended, both lease
// pushes land on different cards, and the one request id claims two cards
// and gets two answers.
func TestConcurrentRetryIsOneRequest(t *testing.T) {
	retryDuringFirstAttempt(t, func(*world, string) {})
}

// TestRetryTakesTurnsAfterGitClean: the cache directory is ignored, so
// git clean -fdX may delete it while the first attempt of a request is
// out; a retry that starts then must still wait for it, not stage a claim
// of its own.
func TestRetryTakesTurnsAfterGitClean(t *testing.T) {
	retryDuringFirstAttempt(t, func(w *world, dir string) { w.git(dir, "clean", "-fdXq", ".backlog") })
}

// retryDuringFirstAttempt runs request req-1 on clone a, and a retry of it
// through a second handle of the same clone while the first attempt's
// lease push is out in its second round (bob took its first card, and its
// second round picks another card than the retry would); before runs just
// before the retry starts. The retry must wait, answer the first attempt's
// card, and the remote must hold one claim of alice's.
func retryDuringFirstAttempt(t *testing.T, before func(w *world, dir string)) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a1, a2, b := open(t, da), open(t, da), open(t, db)
	create(t, a1, "seed", "C1", "C2", "C3")
	s1 := syncer(t, a1, Options{Remote: "origin", Actor: "alice"})
	s2 := syncer(t, a2, Options{Remote: "origin", Actor: "alice"})
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := s1.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	s1.pick = func(n int) int { return n - 1 } // the first attempt's second round takes C3
	req := ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: "req-1"}, Owner: "alice", TTL: time.Hour}
	var second *ledger.Card
	var secondErr error
	done := make(chan struct{})
	waited := false
	s1.beforeLeasePush = func(card string, round int) {
		switch round {
		case 1: // bob takes the first attempt's card, so it needs a second round
			if c, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, Owner: "bob", ID: card, TTL: time.Hour}); err != nil || c == nil {
				t.Errorf("bob's claim: %v %v", c, err)
			}
		case 2: // the retry starts while the first attempt's push is out
			before(w, da)
			waiting := make(chan struct{})
			s2.onRequestWait = func() { waited = true; close(waiting) }
			go func() {
				defer close(done)
				second, _, secondErr = s2.Claim(bg, req)
			}()
			select {
			case <-waiting:
			case <-done:
			}
		}
	}
	first, _, err := s1.Claim(bg, req)
	<-done
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got := cards(t, b); strings.Count(got, "claimed alice") != 1 {
		t.Errorf("request req-1 holds more than one card on the remote:\n%s", got)
	}
	if got := cards(t, a1); strings.Count(got, "claimed alice") != 1 {
		t.Errorf("request req-1 claimed more than one card here:\n%s", got)
	}
	if err != nil || first == nil {
		t.Fatalf("first attempt: %v %v", first, err)
	}
	if !waited || secondErr != nil || second == nil || second.ID != first.ID {
		t.Fatalf("one request answered %v and then %v (%v; the retry waited: %v)", first.ID, second, secondErr, waited)
	}
}

// TestRetryWaitRunsOutAsALockTimeout: a retry that waits out requestWait
// for the first attempt fails as a lock timeout (exit 5) and writes
// nothing.
func TestRetryWaitRunsOutAsALockTimeout(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1")
	s := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	if _, err := s.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	held, err := s.holdRequest(bg, "req-1") // the first attempt, still out
	if err != nil {
		t.Fatal(err)
	}
	defer held()
	defer func(d time.Duration) { requestWait = d }(requestWait)
	requestWait = 100 * time.Millisecond
	other := syncer(t, open(t, da), Options{Remote: "origin", Actor: "alice"})
	req := ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: "req-1"}, Owner: "alice", TTL: time.Hour}
	c, _, err := other.Claim(bg, req)
	if !errors.Is(err, ledger.ErrLockTimeout) || c != nil {
		t.Fatalf("retry while the first attempt is out: %v %v; want a lock timeout", c, err)
	}
	var h interface{ Hint() string }
	if !errors.As(err, &h) || !strings.Contains(h.Hint(), "--request-id") {
		t.Fatalf("the timeout advises the backlog lock's remedy: %v", err)
	}
	if _, _, err := other.Lease(bg, "req-1", func(context.Context, string) (ledger.Card, error) {
		t.Fatal("the lease write ran without its turn")
		return ledger.Card{}, nil
	}); !errors.Is(err, ledger.ErrLockTimeout) {
		t.Fatalf("lease retry while the first attempt is out: %v; want a lock timeout", err)
	}
	if got := cards(t, a); strings.Contains(got, "claimed") {
		t.Fatalf("a retry that timed out wrote:\n%s", got)
	}
}
