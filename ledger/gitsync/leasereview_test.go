package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/lock"
)

// With epics.auto_close, completing an epic's last open child through the
// remote completes the epic, as a local completion does.
func TestRemoteCompleteRollsUpTheEpic(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	cfg := filepath.Join(da, ".backlog", ledger.ConfigFile)
	if err := os.WriteFile(cfg, []byte(`{"version":1,"epics":{"auto_close":true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a := open(t, da)
	create(t, a, "seed", "E")
	if _, _, err := a.Create(bg, ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "seed"}, ID: "C1", Title: "child", Parent: "E"}); err != nil {
		t.Fatal(err)
	}
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil || card.ID != "C1" {
		t.Fatal(card, err)
	}
	c, _, err := sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch})
	})
	if err != nil || c.Status != ledger.StatusDone {
		t.Fatalf("complete: %+v %v", c, err)
	}
	if got := cards(t, a); got != "C1 done #1 v3\nE done #0 v2\n" {
		t.Fatalf("the epic was not closed with its last child:\n%s", got)
	}
	if got := cards(t, w.freshClone("plain")); got != "C1 done #1 v3\nE done #0 v2\n" {
		t.Fatalf("the branch holds:\n%s", got)
	}
}

// The same when another process of the clone wrote while the completion's
// lease push was out: the completion comes in by a pull, and the epic is
// still closed.
func TestRemoteCompleteRollsUpTheEpicAfterAPull(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	cfg := filepath.Join(da, ".backlog", ledger.ConfigFile)
	if err := os.WriteFile(cfg, []byte(`{"version":1,"epics":{"auto_close":true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a := open(t, da)
	create(t, a, "seed", "E")
	if _, _, err := a.Create(bg, ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "seed"}, ID: "C1", Title: "child", Parent: "E"}); err != nil {
		t.Fatal(err)
	}
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil || card.ID != "C1" {
		t.Fatal(card, err)
	}
	other := open(t, da)
	sa.beforeLeasePush = func(string, int) {
		create(t, other, "carol", "X")
	}
	c, _, err := sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch})
	})
	if err != nil || c.Status != ledger.StatusDone {
		t.Fatalf("complete: %+v %v", c, err)
	}
	if got := cards(t, open(t, da)); got != "C1 done #1 v3\nE done #0 v2\nX ready #0 v1\n" {
		t.Fatalf("the epic was not closed with its last child:\n%s", got)
	}
}

// A claim whose lease push landed while another process of the clone held
// the backlog lock past this one's lock wait is not told it failed (the
// claim stands on the remote, and a lock timeout says nothing was
// written): the append waits again, and the claim is acknowledged.
func TestLandedClaimOutlastsALockTimeout(t *testing.T) {
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
	sa.beforeLeasePush = func(string, int) {
		lk := lock.New(filepath.Join(dir, ledger.LockFile))
		if err := lk.Acquire(bg, time.Second); err != nil {
			t.Error(err)
			return
		}
		go func() {
			time.Sleep(400 * time.Millisecond)
			_ = lk.Release()
		}()
	}
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	sa.beforeLeasePush = nil
	if err != nil || card == nil || card.ClaimOwner != "alice" {
		b := open(t, w.clone("b"))
		sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
		if _, err := sb.Pull(bg); err != nil {
			t.Fatal(err)
		}
		t.Fatalf("alice was told %+v, %v; the remote holds:\n%s", card, err, cards(t, b))
	}
}

// A claim through a remote whose branch holds no backlog yet carries this
// clone's own events (the cards it created) to the branch, as a claim
// does whenever this clone holds events no push carried.
func TestRemoteClaimCarriesOwnEventsToABranchWithoutBacklog(t *testing.T) {
	w := newWorld(t)
	code := filepath.Join(w.root, "code")
	w.git(w.root, "clone", "-q", w.bare, code)
	if err := os.WriteFile(filepath.Join(code, "README"), []byte("code\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git(code, "add", "README")
	w.git(code, "commit", "-q", "-m", "code")
	w.git(code, "push", "-q", "origin", "HEAD:main")
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1", "C2")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	if out, err := w.tryGit(w.bare, "cat-file", "-e", "main:.backlog/ledger.jsonl"); err != nil {
		t.Fatalf("the branch holds no backlog after the claim: %s", out)
	}
}

// A claim or heartbeat through the remote does not push the branch, but
// it leaves the clone's work tree clean: the backlog is committed to the
// local branch, so a plain git pull that follows merges rather than
// refusing to overwrite the backlog's uncommitted changes.
func TestRemoteClaimLeavesTheWorkTreeClean(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	before := w.git(w.bare, "rev-parse", "main")
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	if _, _, err := sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch})
	}); err != nil {
		t.Fatal(err)
	}
	if after := w.git(w.bare, "rev-parse", "main"); after != before {
		t.Fatal("a claim and a heartbeat pushed the branch")
	}
	if st := w.git(da, "status", "--porcelain"); st != "" {
		t.Fatalf("the work tree after a remote claim and heartbeat:\n%s", st)
	}
	create(t, b, "bob", "C2")
	if _, err := sb.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if out, err := w.tryGit(da, "pull", "--no-rebase", "-q"); err != nil {
		t.Fatalf("git pull after a remote claim: %v\n%s", err, out)
	}
}

// A lease line the branch holds compacted in its snapshot while a plain
// git union merge put older lines back at the head of its ledger.jsonl:
// mayBeCompacted lets it through without reading the snapshot, and it is
// merged into the ledger a second time. The fold still counts it once.
func TestCompactedLeaseLineAfterAGitUnionMerge(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin", Actor: "alice"}), syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	create(t, a, "seed", "C1", "C2")
	push(t, sa)
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", ID: "C1", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	compact(t, a)
	push(t, sa) // the branch: the claim in its snapshot, ledger.jsonl empty
	// Bob writes with the plain git flow: commit, git pull, git push.
	create(t, b, "bob", "B1")
	if _, err := sb.Commit(bg); err != nil {
		t.Fatal(err)
	}
	w.git(db, "pull", "-q", "--no-rebase", "origin", "main")
	w.git(db, "push", "-q", "origin", "main")
	dc := w.clone("c")
	c := open(t, dc)
	sc := syncer(t, c, Options{Remote: "origin", Actor: "carol"})
	if _, err := sc.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if sc.lv.pending != 1 {
		t.Fatalf("%d lease lines merged into the branch's ledger, want the compacted claim's", sc.lv.pending)
	}
	want := "B1 ready #0 v1\nC1 claimed alice#1 v2\nC2 ready #0 v1\n"
	if got := cards(t, c); got != want {
		t.Fatalf("carol reads:\n%s", got)
	}
	var conflicts []ledger.Conflict
	_ = c.View(func(s *ledger.State, _ time.Time) error { conflicts = s.Conflicts(); return nil })
	if len(conflicts) != 0 {
		t.Fatalf("conflicts %+v", conflicts)
	}
	// Carol heartbeats nothing, but claims C2 and completes it: the branch
	// is carried, and holds every event once.
	got, _, err := sc.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "carol"}, Owner: "carol", TTL: time.Hour})
	if err != nil || got == nil || got.ID != "C2" {
		t.Fatal(got, err)
	}
	if _, _, err := sc.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return c.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "carol", RequestID: rid}, ID: "C2", Owner: "carol", Epoch: got.ClaimEpoch})
	}); err != nil {
		t.Fatal(err)
	}
	f := w.freshClone("fresh")
	if got := cards(t, f); got != "B1 ready #0 v1\nC1 claimed alice#1 v2\nC2 done #1 v3\n" {
		t.Fatalf("a fresh clone reads:\n%s", got)
	}
	if n := len(treeIDs(t, fullTree(t, f))); n != 6 {
		t.Fatalf("%d events on the branch, want 6", n)
	}
	if _, err := sa.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got := cards(t, a); got != "B1 ready #0 v1\nC1 claimed alice#1 v2\nC2 done #1 v3\n" {
		t.Fatalf("alice reads:\n%s", got)
	}
}

// A card's lease ref does not grow with every heartbeat: a heartbeat is
// carried to the branch once the lease ref holds leaseLinesCarried lines
// the branch lacks, and the next lease write leaves out what the branch
// holds. Every fetch reads every lease ref's tip, done cards' included.
// 2*leaseLinesCarried+2 heartbeats are two such carries and the writes
// after each.
func TestLeaseRefStaysShortUnderHeartbeats(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	push(t, sa)
	card, _, err := sa.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	const beats = 2*leaseLinesCarried + 2
	for range beats {
		if _, _, err := sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
			return a.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := sa.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: card.ClaimEpoch})
	}); err != nil {
		t.Fatal(err)
	}
	body := w.git(w.bare, "log", "-1", "--format=%b", sa.leasePrefix+"C1")
	if n := strings.Count(body, `"op":`); n > leaseLinesCarried+2 {
		t.Fatalf("the done card's lease ref holds %d lines", n)
	}
	if got := cards(t, w.freshClone("plain")); got != "C1 done #1 v"+strconv.Itoa(3+beats)+"\n" {
		t.Fatalf("the branch holds:\n%s", got)
	}
}
