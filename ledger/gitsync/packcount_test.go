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
// syncer of its own as each bl process has: today a claim is 1 fetch and
// 1 push (the lease ref), a complete 1 fetch and 2 pushes (the lease
// ref, then the branch). Neither may cost more; docs/SYNC.md's table of
// what each call costs says the same.
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
	if cf > 1 || cp > 1 || ff > 1 || fp > 2 || cf+cp == 0 {
		t.Errorf("claim: %d fetches, %d pushes (at most 1, 1); complete: %d fetches, %d pushes (at most 1, 2)", cf, cp, ff, fp)
	}
}
