package ledger

import (
	"testing"
	"time"
)

// A heartbeat written after its agent made it (HeartbeatRequest.At, as a
// push through a git remote carries a noted one) renews the lease from
// when it was made, not from the write; an At not before the write is the
// write's time. A fresh handle folds the file to the same lease.
func TestHeartbeatAt(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	c := e.claim("A", "w1", time.Minute)
	made := e.clk.Now()
	e.clk.Advance(20 * time.Second)
	got, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: c.ClaimEpoch, At: made.Add(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if want := made.Add(10 * time.Second); !got.LastHeartbeatAt.Equal(want) || !got.LeaseExpiresAt.Equal(want.Add(time.Minute)) {
		t.Fatalf("heartbeat at %v, lease to %v; want %v and a minute after", got.LastHeartbeatAt, got.LeaseExpiresAt, want)
	}
	fresh := e.open()
	defer fresh.Close()
	if f, err := fresh.Get("A"); err != nil || !f.LeaseExpiresAt.Equal(*got.LeaseExpiresAt) {
		t.Fatalf("reopened lease %v, %v; want %v", f.LeaseExpiresAt, err, got.LeaseExpiresAt)
	}
	now := e.clk.Now()
	got, err = e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: c.ClaimEpoch, At: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if d := got.LastHeartbeatAt.Sub(now); d < 0 || d > time.Millisecond { // the stamp may follow the last by a ns
		t.Fatalf("a heartbeat said to be made an hour ahead is timed %v, want the write's %v", got.LastHeartbeatAt, now)
	}
}
