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

// packCounter wraps git-upload-pack (a fetch) and git-receive-pack (a
// push) on PATH, where go-git's file transport finds them, and counts the
// calls the remote serves.
type packCounter struct {
	t   *testing.T
	log string
}

func countPacks(t *testing.T) *packCounter {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	for _, name := range []string{"upload-pack", "receive-pack"} {
		script := "#!/bin/sh\necho " + name + " >> '" + log + "'\nexec git " + name + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, "git-"+name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &packCounter{t: t, log: log}
}

// take returns the fetches and pushes since the last take.
func (c *packCounter) take() (fetches, pushes int) {
	c.t.Helper()
	data, err := os.ReadFile(c.log)
	if err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
	_ = os.Remove(c.log)
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		switch l {
		case "upload-pack":
			fetches++
		case "receive-pack":
			pushes++
		}
	}
	return fetches, pushes
}

// What a remote claim and its complete cost the remote, each call in a
// syncer of its own as each bl process has: a claim is 1 fetch and 1 push
// (the lease ref), its complete no fetch and 1 push (the lease ref and the
// branch as one atomic update, leasefast.go): 1 fetch and 2 pushes for
// the two, where they were 2 and 3. docs/SYNC.md's table of what each call
// costs says the same.
func TestRemoteClaimCompleteGitCalls(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1", "C2")
	if _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	n := countPacks(t)
	card, _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatal(card, err)
	}
	cf, cp := n.take()
	sc := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	if _, _, err := sc.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: card.ID, Owner: "alice", Epoch: card.ClaimEpoch})
	}); err != nil {
		t.Fatal(err)
	}
	ff, fp := n.take()
	t.Logf("claim: %d fetches, %d pushes; complete: %d fetches, %d pushes", cf, cp, ff, fp)
	if cf+ff > 1 || cp+fp > 2 || cf+cp == 0 || fp == 0 {
		t.Errorf("claim: %d fetches, %d pushes; complete: %d fetches, %d pushes; the two at most 1 fetch and 2 pushes", cf, cp, ff, fp)
	}
	// This clone's branch is the remote's, its work tree clean.
	if st := w.git(da, "status", "--porcelain"); st != "" {
		t.Errorf("git status after the complete:\n%s", st)
	}
	if l, r := w.git(da, "rev-parse", "main"), w.git(w.bare, "rev-parse", "main"); l != r {
		t.Errorf("local main %s, remote main %s", l, r)
	}
	eventIDs(t, a) // no event twice
	// The remote holds the completion, on the branch and the lease ref.
	db := w.clone("b")
	b := open(t, db)
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "bob"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got := cards(t, b); !strings.Contains(got, card.ID+" done ") {
		t.Errorf("the remote's backlog:\n%s", got)
	}
	if n := branchOps(w, card.ID, ledger.OpComplete); n != 1 {
		t.Errorf("the remote branch holds %d completions of %s, want 1", n, card.ID)
	}
}

// branchOps counts the events of op on card in the remote branch's
// ledger.jsonl.
func branchOps(w *world, card string, op ledger.Op) int {
	w.t.Helper()
	n := 0
	for _, l := range strings.SplitAfter(w.git(w.bare, "show", "main:.backlog/"+ledger.LedgerFile), "\n") {
		if e, err := ledger.DecodeLine([]byte(l)); err == nil && e.Card == card && e.Op == op {
			n++
		}
	}
	return n
}
