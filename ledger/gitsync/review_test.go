package gitsync

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/go-git/go-git/v5/plumbing"
)

// Review 1. A remote claim that fails on its last round is withdrawn by a
// local release fenced only by (owner, epoch). A voided claim has the same
// epoch as the claim that beat it, so when both clones use the same owner
// name (agent-1 on every box), the withdrawal, once synced, releases the
// lease the other clone was acknowledged for.
func TestReviewWithdrawReleasesTheWinnersLease(t *testing.T) {
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

// Review 2. keepLocalSettings keeps config.json only when it differs from
// the branch's commit. A config edit that was committed (bl sync) but not
// pushed yet equals the branch's commit, so the next push replaces it with
// the remote's older config, on disk and in the pushed merge: a lost update.
func TestReviewPushRevertsCommittedConfig(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	// Bob edits the config and commits it (bl sync), not pushed yet.
	cfgPath := filepath.Join(db, ".backlog", ledger.ConfigFile)
	old, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(old, []byte(`"version"`), []byte(`"compact_bytes": 12345, "version"`), 1)
	if bytes.Equal(edited, old) {
		t.Fatalf("config has no version key:\n%s", old)
	}
	if err := os.WriteFile(cfgPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := sb.Commit(bg); err != nil || !res.Committed {
		t.Fatal(res, err)
	}
	// Alice pushes an unrelated event; the remote's config is unchanged.
	create(t, a, "alice", "C2")
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	// Bob pushes.
	if _, err := sb.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	now, _ := os.ReadFile(cfgPath)
	if !bytes.Contains(now, []byte("12345")) {
		t.Fatalf("bob's committed config edit was reverted by his push; config.json is now:\n%s", now)
	}
}

// Review 3. commit used to retry a moved branch ref (errRefMoved) with the tree
// it read before, and Commit/exchange read the tree before committing
// without re-checking the branch: when another bl process committed a
// newer backlog in between, the new tip holds the older backlog, so the
// branch's tip loses events the previous commit had (until the next sync).
// The interleaving is reproduced by calling commit with the tree read
// before the other process's commit.
func TestReviewStaleTreeCommitRegressesBranchTip(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1")
	s1 := syncer(t, a, Options{})
	if _, err := s1.Commit(bg); err != nil {
		t.Fatal(err)
	}
	// Process 1 reads the backlog for its commit; while it does, process
	// 2 appends and commits first. Process 1 must notice the branch moved
	// and read again rather than commit the older backlog on top.
	create(t, a, "seed", "C0") // something for process 1 to commit
	reads := 0
	read := func() (ledger.Tree, error) {
		reads++
		stale, err := a.Tree(bg)
		if reads == 1 {
			create(t, a, "seed", "C2")
			s2 := syncer(t, a, Options{})
			if res, err := s2.Commit(bg); err != nil || !res.Committed {
				t.Fatal(res, err)
			}
		}
		return stale, err
	}
	if _, _, _, err := s1.commit(read, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	if reads < 2 {
		t.Fatalf("the backlog was read %d time(s); a moved branch must make commit read it again", reads)
	}
	head, err := s1.g.refHash(s1.branch)
	if err != nil {
		t.Fatal(err)
	}
	tip, err := s1.g.readBacklog(head)
	if err != nil {
		t.Fatal(err)
	}
	ids := treeIDs(t, tip)
	if len(ids) != 3 {
		t.Fatalf("the branch tip holds %d events; the commit before it held 3 (C1, C0, C2 created)", len(ids))
	}
}
