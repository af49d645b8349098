package gitsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// fastWorld is a remote with cards C1 and C2 and alice's clone, which has
// claimed one of them through the remote, each call in a syncer of its
// own as each bl process has.
type fastWorld struct {
	*world
	da   string
	a    *ledger.Backlog
	card *ledger.Card
}

func newFastWorld(t *testing.T, setup func(w *world)) *fastWorld {
	t.Helper()
	w := newWorld(t)
	if setup != nil {
		setup(w)
	}
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1", "C2")
	if _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	card, _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	return &fastWorld{world: w, da: da, a: a, card: card}
}

// complete completes the claimed card through s with request id rid.
func (f *fastWorld) complete(s *Syncer, rid string) (ledger.Card, error) {
	c, _, err := s.Lease(bg, rid, func(ctx context.Context, r string) (ledger.Card, error) {
		return f.a.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: r}, ID: f.card.ID, Owner: "alice", Epoch: f.card.ClaimEpoch})
	})
	return c, err
}

func (f *fastWorld) syncer(t *testing.T) *Syncer {
	return syncer(t, f.a, Options{Remote: "origin", Actor: "alice"})
}

// converged checks that the completion stands exactly once in alice's
// backlog, on the remote branch once a sync carried what alice holds,
// and in a fresh clone's fold.
func (f *fastWorld) converged(t *testing.T) {
	t.Helper()
	if _, err := f.syncer(t).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	eventIDs(t, f.a)
	if got := cards(t, f.a); !strings.Contains(got, f.card.ID+" done ") {
		t.Errorf("alice's backlog:\n%s", got)
	}
	if n := branchOps(f.world, f.card.ID, ledger.OpComplete); n != 1 {
		t.Errorf("the remote branch holds %d completions of %s, want 1", n, f.card.ID)
	}
	dc := f.clone("check" + strings.ReplaceAll(t.Name(), "/", "-"))
	c := open(t, dc)
	if _, err := syncer(t, c, Options{Remote: "origin", Actor: "carol"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	eventIDs(t, c)
	if got := cards(t, c); !strings.Contains(got, f.card.ID+" done ") {
		t.Errorf("the remote's backlog:\n%s", got)
	}
}

// A teammate pushes the branch between the claim and the complete: the
// atomic push is refused as a whole, and after a fetch the lease ref and
// the branch go out as one push again: the completion lands once, in the
// fetch and the two pushes a complete cost before.
func TestFastCompleteAfterTeammateBranchPush(t *testing.T) {
	f := newFastWorld(t, nil)
	db := f.clone("b")
	b := open(t, db)
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	create(t, b, "bob", "B1")
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	n := countPacks(t)
	if _, err := f.complete(f.syncer(t), ""); err != nil {
		t.Fatal(err)
	}
	// The fast push refused, then a fetch and the one push again.
	if fetches, pushes := n.take(); fetches != 1 || pushes != 2 {
		t.Errorf("the complete made %d fetches and %d pushes, want 1 and 2", fetches, pushes)
	}
	f.converged(t)
	if got := cards(t, f.a); !strings.Contains(got, "B1 ") {
		t.Errorf("alice's backlog lacks bob's card:\n%s", got)
	}
}

// A teammate writes on the card's lease ref between the claim and the
// complete (here a release of alice's lease): the atomic push is refused,
// and the ordinary round finds the lease gone: the completion is refused
// and written nowhere.
func TestFastCompleteAfterTeammateLeaseWrite(t *testing.T) {
	f := newFastWorld(t, nil)
	db := f.clone("b")
	b := open(t, db)
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, _, err := sb.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b.Release(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "bob", RequestID: rid}, ID: f.card.ID, Owner: "alice", Epoch: f.card.ClaimEpoch})
	}); err != nil {
		t.Fatal(err)
	}
	n := countPacks(t)
	_, err := f.complete(f.syncer(t), "")
	if fetches, pushes := n.take(); fetches != 1 || pushes != 1 {
		t.Errorf("the complete made %d fetches and %d pushes, want 1 and 1 (the fast push refused)", fetches, pushes)
	}
	if !errors.Is(err, ledger.ErrFenced) && !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("complete after the teammate's release: %v, want a refusal", err)
	}
	eventIDs(t, f.a)
	if got := cards(t, f.a); strings.Contains(got, f.card.ID+" done ") {
		t.Errorf("alice's backlog:\n%s", got)
	}
	if _, err := f.syncer(t).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if n := branchOps(f.world, f.card.ID, ledger.OpComplete); n != 0 {
		t.Errorf("the remote branch holds %d completions of %s, want none", n, f.card.ID)
	}
}

// A process killed after building the commit, before the push, wrote
// nothing on the remote and appended nothing: a retry lands the
// completion once.
func TestFastCompleteKilledBeforePush(t *testing.T) {
	f := newFastWorld(t, nil)
	s := f.syncer(t)
	s.beforeFastPush = func() bool { return true }
	if _, err := f.complete(s, "done-1"); !errors.Is(err, errKilled) {
		t.Fatalf("got %v, want the test's stop", err)
	}
	if n := branchOps(f.world, f.card.ID, ledger.OpComplete); n != 0 {
		t.Fatalf("the remote branch holds %d completions before the push", n)
	}
	if got := cards(t, f.a); strings.Contains(got, f.card.ID+" done ") {
		t.Fatalf("alice's backlog holds the completion before the push:\n%s", got)
	}
	n := countPacks(t)
	if _, err := f.complete(f.syncer(t), "done-1"); err != nil {
		t.Fatal(err)
	}
	if fetches, pushes := n.take(); fetches != 0 || pushes != 1 {
		t.Errorf("the retry made %d fetches and %d pushes, want 0 and 1", fetches, pushes)
	}
	f.converged(t)
}

// A process killed after the push landed, before the local append: the
// remote holds the completion, and the next command, a retry or a sync,
// brings it in once.
func TestFastCompleteKilledAfterPush(t *testing.T) {
	for _, next := range []string{"retry", "sync"} {
		t.Run(next, func(t *testing.T) {
			f := newFastWorld(t, nil)
			s := f.syncer(t)
			s.afterFastPush = func() bool { return true }
			if _, err := f.complete(s, "done-1"); !errors.Is(err, errKilled) {
				t.Fatalf("got %v, want the test's stop", err)
			}
			if n := branchOps(f.world, f.card.ID, ledger.OpComplete); n != 1 {
				t.Fatalf("the remote branch holds %d completions after the push", n)
			}
			switch next {
			case "retry":
				c, err := f.complete(f.syncer(t), "done-1")
				if err != nil || c.Status != ledger.StatusDone {
					t.Fatal(c.Status, err)
				}
			case "sync":
				if _, err := f.syncer(t).Pull(bg); err != nil {
					t.Fatal(err)
				}
			}
			f.converged(t)
		})
	}
}

// Another process of the clone appends between the push and the local
// append: the completion comes in from the branch, and the other
// process's note reaches the remote too.
func TestFastCompleteBacklogMovedAfterPush(t *testing.T) {
	f := newFastWorld(t, nil)
	s := f.syncer(t)
	s.afterFastPush = func() bool {
		if _, err := f.a.Note(bg, ledger.NoteRequest{Mutation: ledger.Mutation{Actor: "alice"}, ID: "C2", Text: "meanwhile"}); err != nil {
			t.Error(err)
		}
		return false
	}
	c, err := f.complete(s, "")
	if err != nil || c.Status != ledger.StatusDone {
		t.Fatal(c.Status, err)
	}
	f.converged(t)
	if n := branchOps(f.world, "C2", ledger.OpNote); n != 1 {
		t.Errorf("the remote branch holds %d notes on C2, want 1", n)
	}
}

// A remote that does not push atomically: the claim records no tip, and
// the complete runs the ordinary rounds.
func TestFastCompleteNoAtomicRemote(t *testing.T) {
	f := newFastWorld(t, func(w *world) { w.git(w.bare, "config", "receive.advertiseAtomic", "false") })
	n := countPacks(t)
	if _, err := f.complete(f.syncer(t), ""); err != nil {
		t.Fatal(err)
	}
	if fetches, pushes := n.take(); fetches != 1 || pushes != 2 {
		t.Errorf("the complete made %d fetches and %d pushes, want the ordinary 1 and 2", fetches, pushes)
	}
	f.converged(t)
}

// A remote that stops pushing atomically between the claim and the
// complete refuses the fast push before anything is sent, and the
// ordinary rounds land the completion.
func TestFastCompleteRemoteLostAtomic(t *testing.T) {
	f := newFastWorld(t, nil)
	f.git(f.bare, "config", "receive.advertiseAtomic", "false")
	if _, err := f.complete(f.syncer(t), ""); err != nil {
		t.Fatal(err)
	}
	f.converged(t)
}

// A teammate writes on the card's lease ref alone (a heartbeat of alice's
// lease, which leaves the branch as it was): the atomic push is refused
// for the lease ref, and the ordinary rounds land the completion once.
func TestFastCompleteAfterTeammateHeartbeat(t *testing.T) {
	f := newFastWorld(t, nil)
	db := f.clone("b")
	b := open(t, db)
	before := f.git(f.bare, "rev-parse", "main")
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, _, err := sb.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "bob", RequestID: rid}, ID: f.card.ID, Owner: "alice", Epoch: f.card.ClaimEpoch})
	}); err != nil {
		t.Fatal(err)
	}
	if after := f.git(f.bare, "rev-parse", "main"); after != before {
		t.Fatal("the heartbeat moved the branch")
	}
	n := countPacks(t)
	if _, err := f.complete(f.syncer(t), ""); err != nil {
		t.Fatal(err)
	}
	if fetches, pushes := n.take(); fetches != 1 || pushes != 3 {
		t.Errorf("the complete made %d fetches and %d pushes, want 1 and 3", fetches, pushes)
	}
	f.converged(t)
}

// The branch moves again between the fetch after a refused fast push and
// the one push that follows it: that push is refused too, and the lease
// ref alone, then the branch, land the completion once.
func TestFastCompleteBranchMovesTwice(t *testing.T) {
	f := newFastWorld(t, nil)
	db := f.clone("b")
	b := open(t, db)
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	bobPushes := func(id string) {
		create(t, b, "bob", id)
		if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Push(bg, Hooks{}); err != nil {
			t.Error(err)
		}
	}
	bobPushes("B1")
	s := f.syncer(t)
	once := false
	s.beforeLeasePush = func(card string, round int) {
		if round == 1 && !once { // the one push after the fetch
			once = true
			bobPushes("B2")
		}
	}
	if _, err := f.complete(s, ""); err != nil {
		t.Fatal(err)
	}
	f.converged(t)
	if got := cards(t, f.a); !strings.Contains(got, "B2 ") {
		t.Errorf("alice's backlog lacks bob's second card:\n%s", got)
	}
}

// The branch and its remote-tracking ref moved to a commit this backlog
// never took in (here git fetch and git reset --soft; a fetch in another
// worktree of the repository does the same): the push without a fetch
// would commit a backlog that lacks the commit's events, so it is not
// tried, and the ordinary rounds take the events in first.
func TestFastCompleteNotOnACommitTheBacklogLacks(t *testing.T) {
	f := newFastWorld(t, nil)
	db := f.clone("b")
	b := open(t, db)
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	create(t, b, "bob", "B1")
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	f.git(f.da, "fetch", "-q", "origin")
	f.git(f.da, "reset", "-q", "--soft", "origin/main")
	if _, err := f.complete(f.syncer(t), ""); err != nil {
		t.Fatal(err)
	}
	f.converged(t)
	if got := f.git(f.bare, "show", "main:.backlog/"+ledger.LedgerFile); !strings.Contains(got, `"B1"`) {
		t.Errorf("the remote branch lost bob's card:\n%s", got)
	}
}

// A backlog rewound by hand (git checkout OLD -- .backlog) while the
// remote-tracking ref is still the commit it last took in: the push
// without a fetch must not make that older backlog the branch's tip. The
// remote branch keeps every event it held.
func TestFastCompleteOnARewoundBacklog(t *testing.T) {
	f := newFastWorld(t, nil)
	// The claim reaches the branch: old holds it, and nothing later.
	if _, err := f.syncer(t).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	old := strings.TrimSpace(f.git(f.bare, "rev-parse", "main"))
	db := f.clone("b")
	b := open(t, db)
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	create(t, b, "bob", "B1")
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	// alice takes B1 in through a lease write (another claim), which
	// notes the commit it took in.
	if c, _, err := f.syncer(t).Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour}); err != nil || c == nil {
		t.Fatal(c, err)
	}
	tip := f.git(f.bare, "show", "main:.backlog/"+ledger.LedgerFile)
	if !strings.Contains(tip, `"B1"`) {
		t.Fatalf("the claim did not carry B1 to the branch:\n%s", tip)
	}
	if s := f.syncer(t); s.loadLeaseTips().applied.String() != strings.TrimSpace(f.git(f.da, "rev-parse", "origin/main")) {
		t.Fatal("the lease tips do not name the remote-tracking commit: the push without a fetch would not be tried")
	}
	f.git(f.da, "checkout", old, "--", ".backlog")
	if _, err := f.complete(f.syncer(t), ""); err != nil {
		t.Fatal(err)
	}
	got := f.git(f.bare, "show", "main:.backlog/"+ledger.LedgerFile)
	for _, l := range strings.SplitAfter(tip, "\n") {
		if !strings.Contains(got, l) {
			t.Errorf("the remote branch lost %q", l)
		}
	}
	if n := branchOps(f.world, f.card.ID, ledger.OpComplete); n != 1 {
		t.Errorf("the remote branch holds %d completions of %s, want 1", n, f.card.ID)
	}
}

// A teammate force-adds cache/leasetips (git ignores it only by default)
// and pushes it: every clone that checks it out gets the teammate's
// bytes. They are not this clone's record of its pushes: bl neither
// believes them nor writes over them (the user's worktree would change),
// so a lease write takes the ordinary rounds, and the branch keeps every
// event.
func TestFastLeaseTipsTrackedByGitAreNotBelieved(t *testing.T) {
	f := newFastWorld(t, nil)
	db := f.clone("b")
	head := strings.TrimSpace(f.git(f.bare, "rev-parse", "main"))
	ref := strings.Fields(f.git(f.bare, "for-each-ref", "--format=%(objectname) %(refname)", LeaseRefPrefix))
	if len(ref) != 2 {
		t.Fatalf("want alice's one lease ref, got %q", ref)
	}
	forged := leaseTipsHeader + "applied " + head + "\n" + ref[0] + " " + f.card.ID + "\n"
	if err := os.MkdirAll(filepath.Join(db, ".backlog", ledger.CacheDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(db, ".backlog", ledger.CacheDir, leaseTipsFile), []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	f.git(db, "add", "-f", ".backlog/"+ledger.CacheDir+"/"+leaseTipsFile)
	f.git(db, "commit", "-qm", "forge")
	f.git(db, "push", "-q", "origin", "main")

	dc := f.clone("c")
	c := open(t, dc)
	cs := func() *Syncer { return syncer(t, c, Options{Remote: "origin", Actor: "carol"}) }
	card, _, err := cs().Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "carol"}, Owner: "carol", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	before := f.git(f.bare, "show", "main:.backlog/"+ledger.LedgerFile)
	n := countPacks(t)
	_, _, err = cs().Lease(bg, "", func(ctx context.Context, r string) (ledger.Card, error) {
		return c.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "carol", RequestID: r}, ID: card.ID, Owner: "carol", Epoch: card.ClaimEpoch})
	})
	if err != nil {
		t.Fatal(err)
	}
	if fetches, _ := n.take(); fetches != 1 {
		t.Errorf("the complete made %d fetches: the tracked lease tips were believed", fetches)
	}
	if st := f.git(dc, "status", "--porcelain", "--", ".backlog/"+ledger.CacheDir); st != "" {
		t.Errorf("bl wrote over the tracked lease tips:\n%s", st)
	}
	got := f.git(f.bare, "show", "main:.backlog/"+ledger.LedgerFile)
	for _, l := range strings.SplitAfter(before, "\n") {
		if !strings.Contains(got, l) {
			t.Errorf("the remote branch lost %q", l)
		}
	}
	if n := branchOps(f.world, card.ID, ledger.OpComplete); n != 1 {
		t.Errorf("the remote branch holds %d completions of %s, want 1", n, card.ID)
	}
}

// A config.json edited here (not yet pushed) holds no events: the push
// without a fetch still goes out, and carries the edit with the rest.
func TestFastCompleteWithConfigEditedHere(t *testing.T) {
	f := newFastWorld(t, nil)
	path := filepath.Join(f.da, ".backlog", ledger.ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	n := countPacks(t)
	if _, err := f.complete(f.syncer(t), ""); err != nil {
		t.Fatal(err)
	}
	if fetches, pushes := n.take(); fetches != 0 || pushes != 1 {
		t.Errorf("the complete made %d fetches and %d pushes, want 0 and 1", fetches, pushes)
	}
	f.converged(t)
}
