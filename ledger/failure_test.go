package ledger

import (
	"testing"
	"time"
)

// TestExhaustedBlockedAtExpiry: a card whose last attempt's lease runs
// out is blocked from that moment for every reader, with no reclaim:
// show, list, stats, standing; unblock takes it back with a fresh budget.
func TestExhaustedBlockedAtExpiry(t *testing.T) {
	e := newEnv(t)
	if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "A", Title: "a", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	e.claim("A", "w1", time.Minute)
	if c, _ := e.b.Get("A"); c.Status != StatusClaimed {
		t.Fatalf("before expiry: %s", c.Status)
	}
	e.clk.Advance(2 * time.Minute)
	c, err := e.b.Get("A")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != StatusBlocked || c.ClaimOwner != "" || c.BlockedReason == "" || c.LastFailure == nil ||
		c.LastFailure.Owner != "w1" || c.LastFailure.Epoch != 1 || c.LastFailure.Reason != "lease expired" {
		t.Fatalf("after expiry: %+v %+v", c, c.LastFailure)
	}
	list, _ := e.b.List(Filter{Status: []Status{StatusBlocked}}, "")
	if len(list) != 1 || list[0].ID != "A" {
		t.Fatalf("list --status blocked: %+v", list)
	}
	st, _ := e.b.Stats()
	if st.ByStatus[StatusBlocked] != 1 || st.ExpiredClaims != 0 || st.Claimable != 0 {
		t.Fatalf("stats: %+v", st)
	}
	stand, _ := e.b.Standings([]Card{c})
	if stand[0].State != StateBlocked {
		t.Fatalf("standing %+v", stand[0])
	}
	// Nothing was written to make it so.
	if n := len(e.events()); n != 2 {
		t.Fatalf("%d events", n)
	}
	u, err := e.b.Unblock(e.ctx, m, "A")
	if err != nil || u.Status != StatusReady || u.Attempts != 0 || u.ClaimOwner != "" {
		t.Fatalf("unblock: %+v %v", u, err)
	}
}

// TestLastFailureAndClosedBy: a fail keeps its reason on the card, a
// reclaimed lease says it expired, and a completion names who closed it.
func TestLastFailureAndClosedBy(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	c := e.claim("A", "w1", time.Minute)
	got, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: c.ClaimEpoch, Reason: "exit status 2: tests fail"})
	if err != nil {
		t.Fatal(err)
	}
	if f := got.LastFailure; f == nil || f.Reason != "exit status 2: tests fail" || f.Owner != "w1" || f.Epoch != 1 || f.At.IsZero() {
		t.Fatalf("last_failure after fail: %+v", f)
	}
	e.clk.Advance(time.Hour)
	c = e.claim("A", "w2", time.Minute)
	e.clk.Advance(2 * time.Minute)
	if _, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.b.Get("A")
	if f := got.LastFailure; f == nil || f.Reason != "lease expired" || f.Owner != "w2" || f.Epoch != c.ClaimEpoch {
		t.Fatalf("last_failure after expiry: %+v", f)
	}
	e.clk.Advance(time.Hour)
	c = e.claim("A", "w3", time.Minute)
	done, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w3", Epoch: c.ClaimEpoch, Commit: "abc123", Branch: "bl/A"})
	if err != nil || done.ClosedBy != "w3" || done.Commit != "abc123" || done.Branch != "bl/A" {
		t.Fatalf("complete: %+v %v", done, err)
	}
	r, _ := e.b.Reopen(e.ctx, m, "A")
	if r.ClosedBy != "" {
		t.Fatalf("reopened card keeps closed_by %q", r.ClosedBy)
	}
}
