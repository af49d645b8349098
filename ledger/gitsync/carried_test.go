package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func openAt(t *testing.T, dir string, clk *fakeClock) *ledger.Backlog {
	t.Helper()
	b, err := ledger.Open(filepath.Join(dir, ".backlog"), ledger.Options{LockTimeout: time.Minute, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// beat is one agent's plain heartbeat as bl heartbeat makes it through a
// remote: answered and noted without a push within half a TTL of the
// last written one (internal/cli coalescedHeartbeat), else a lease write
// through the remote, each call in a syncer of its own as each bl
// process has. It reports whether it pushed.
func beat(t *testing.T, b *ledger.Backlog, card, owner string, epoch int64, note bool) bool {
	t.Helper()
	var c ledger.Card
	var now time.Time
	if err := b.View(func(st *ledger.State, n time.Time) error {
		c, _ = st.Card(card)
		now = n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	half := time.Duration(c.ClaimTTLSeconds) * time.Second / 2
	if c.Status == ledger.StatusClaimed && c.ClaimOwner == owner && c.LastHeartbeatAt != nil && now.Before(c.LastHeartbeatAt.Add(half)) {
		if note {
			if err := b.NoteHeartbeat(ledger.NotedHeartbeat{Card: card, Owner: owner, Actor: owner, Epoch: epoch, At: now}); err != nil {
				t.Fatal(err)
			}
		}
		return false
	}
	leaseBeat(t, b, card, owner, epoch, nil)
	return true
}

func leaseBeat(t *testing.T, b *ledger.Backlog, card, owner string, epoch int64, progress *int) Result {
	t.Helper()
	s := syncer(t, b, Options{Remote: "origin", Actor: owner})
	_, res, err := s.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: owner, RequestID: rid}, ID: card, Owner: owner, Epoch: epoch, Progress: progress})
	})
	if err != nil {
		t.Fatalf("heartbeat of %s: %v", card, err)
	}
	return res
}

// fleet is one clone whose agents each hold a card claimed through the
// remote with TTL ttl, at clock start.
func fleet(t *testing.T, w *world, clk *fakeClock, ttl time.Duration, cards ...string) (b *ledger.Backlog, epochs map[string]int64) {
	t.Helper()
	da := w.clone("a")
	b = openAt(t, da, clk)
	create(t, b, "seed", cards...)
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "seed"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	epochs = map[string]int64{}
	for _, id := range cards {
		owner := "agent-" + id
		c, _, err := syncer(t, b, Options{Remote: "origin", Actor: owner}).Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, ID: id, Owner: owner, TTL: ttl})
		if err != nil || c == nil {
			t.Fatal(c, err)
		}
		epochs[id] = c.ClaimEpoch
		// The first heartbeat after a claim always pushes.
		leaseBeat(t, b, id, owner, c.ClaimEpoch, nil)
	}
	return b, epochs
}

// heartbeatPushes runs 4 agents of one clone heartbeating their 4 cards
// every TTL/3, out of step, for 4 TTLs, and returns the pushes the remote
// served meanwhile.
func heartbeatPushes(t *testing.T, note bool) int {
	w := newWorld(t)
	start := time.Now().UTC().Truncate(time.Second)
	clk := &fakeClock{now: start}
	const ttl = time.Minute
	cards := []string{"C1", "C2", "C3", "C4"}
	b, epochs := fleet(t, w, clk, ttl, cards...)
	n := countPacks(t)
	n.take()
	step := ttl / 12
	for tick := 1; tick <= 4*12; tick++ {
		clk.set(start.Add(time.Duration(tick) * step))
		for i, id := range cards {
			if (tick-i)%4 == 0 { // every TTL/3, agent i a quarter of that after agent i-1
				beat(t, b, id, "agent-"+id, epochs[id], note)
			}
		}
		// Every lease stands on the remote as its agent kept it.
		if tick%12 == 0 {
			up := remoteState(t, w, clk)
			for _, id := range cards {
				if c, _ := up.Card(id); c.Status != ledger.StatusClaimed || !c.LeaseExpiresAt.After(clk.Now()) {
					t.Fatalf("at %s the remote has %s %s, lease until %v", clk.Now().Sub(start), id, c.Status, c.LeaseExpiresAt)
				}
			}
		}
	}
	_, pushes := n.take()
	return pushes
}

// remoteState is the remote as a fresh clone folds it (branch and lease
// refs).
func remoteState(t *testing.T, w *world, clk *fakeClock) *ledger.State {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "probe")
	w.git(w.root, "clone", "-q", w.bare, dir)
	if _, err := os.Stat(filepath.Join(dir, ".backlog")); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, dir, clk)
	if _, err := syncer(t, b, Options{Remote: "origin", Actor: "probe"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	var out *ledger.State
	if err := b.View(func(st *ledger.State, _ time.Time) error { out = st; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// A clone's heartbeats answered without a push ride along on its next
// push: 4 agents heartbeating 4 cards every TTL/3 for 4 TTLs push fewer
// times than each lease pushing on its own, and every lease stays alive
// on the remote throughout.
func TestCarriedHeartbeatsFewerPushes(t *testing.T) {
	before := heartbeatPushes(t, false)
	after := heartbeatPushes(t, true)
	t.Logf("4 agents x 4 cards, heartbeat every TTL/3, 4 TTLs: %d pushes each lease on its own, %d carried along", before, after)
	if after >= before {
		t.Errorf("%d pushes with heartbeats carried, %d without: want fewer", after, before)
	}
}
