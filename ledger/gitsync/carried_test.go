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

// fakeClock is a clock a test moves; each reading is a microsecond after
// the one before, as a real clock moves between two writes.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Microsecond)
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
// every TTL/3, out of step, for 2 TTLs, and returns the pushes the remote
// served meanwhile. Two TTLs are the least that shows both claims: by the
// second TTL every lease on the remote stands only by a heartbeat pushed
// or carried since the claim, and the counts differ (10 pushes against 4
// on the day this was written; 22 against 9 over 4 TTLs).
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
	for tick := 1; tick <= 2*12; tick++ {
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
// push: 4 agents heartbeating 4 cards every TTL/3 for 2 TTLs push fewer
// times than each lease pushing on its own, and every lease stays alive
// on the remote throughout.
func TestCarriedHeartbeatsFewerPushes(t *testing.T) {
	before := heartbeatPushes(t, false)
	after := heartbeatPushes(t, true)
	t.Logf("4 agents x 4 cards, heartbeat every TTL/3, 2 TTLs: %d pushes each lease on its own, %d carried along", before, after)
	if after >= before {
		t.Errorf("%d pushes with heartbeats carried, %d without: want fewer", after, before)
	}
}

// A dead agent's lease is not kept alive by its neighbours' pushes: after
// C4's agent stops, the other three keep heartbeating (and their pushes
// carry what they noted), and the remote's lease of C4 runs out a TTL
// after C4's agent last heartbeated, no later; another clone then claims
// it. Every lease the remote holds runs from a heartbeat an agent made.
func TestCarriedHeartbeatsKeepNoDeadLeaseAlive(t *testing.T) {
	w := newWorld(t)
	start := time.Now().UTC().Truncate(time.Second)
	clk := &fakeClock{now: start}
	const ttl = time.Minute
	cards := []string{"C1", "C2", "C3", "C4"}
	b, epochs := fleet(t, w, clk, ttl, cards...)
	beats := map[string]map[time.Time]bool{}
	for _, id := range cards {
		var c ledger.Card
		_ = b.View(func(st *ledger.State, _ time.Time) error { c, _ = st.Card(id); return nil })
		beats[id] = map[time.Time]bool{c.LastHeartbeatAt.UTC().Truncate(time.Second): true}
	}
	step := ttl / 12
	var lastC4 time.Time
	carried := 0
	for tick := 1; tick <= 2*12; tick++ {
		now := start.Add(time.Duration(tick) * step)
		clk.set(now)
		for i, id := range cards {
			if (tick-i)%4 != 0 || (id == "C4" && tick > 8) {
				continue
			}
			beats[id][now] = true
			if id == "C4" {
				lastC4 = now
			}
			beat(t, b, id, "agent-"+id, epochs[id], true)
		}
		if tick%3 != 0 {
			continue
		}
		up := remoteState(t, w, clk)
		for _, id := range cards {
			c, _ := up.Card(id)
			if c.LastHeartbeatAt != nil && !beats[id][c.LastHeartbeatAt.UTC().Truncate(time.Second)] {
				t.Fatalf("at %s the remote's %s was heartbeated at %s, when its agent made no heartbeat", now.Sub(start), id, c.LastHeartbeatAt.Sub(start))
			}
			if c.LastHeartbeatAt != nil && id != "C4" && c.LastHeartbeatAt.After(start) {
				carried++
			}
		}
		c4, _ := up.Card("C4")
		if c4.LeaseExpiresAt != nil && c4.LeaseExpiresAt.Truncate(time.Second).After(lastC4.Add(ttl)) { // the clock moves a µs a reading
			t.Fatalf("at %s the remote's lease of C4 runs to %s, past its agent's last heartbeat (%s) + TTL", now.Sub(start), c4.LeaseExpiresAt.Sub(start), lastC4.Sub(start))
		}
	}
	if !clk.Now().After(lastC4.Add(ttl)) {
		t.Fatalf("the run ended before C4's lease could run out")
	}
	// C4's lease ran out: another clone takes it.
	bb := openAt(t, w.clone("b"), clk)
	c, _, err := syncer(t, bb, Options{Remote: "origin", Actor: "bob"}).Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, ID: "C4", Owner: "bob", TTL: ttl})
	if err != nil || c == nil || c.ClaimOwner != "bob" {
		t.Fatalf("claim of C4 after its lease ran out: %v %v", c, err)
	}
	if carried == 0 {
		t.Fatalf("no heartbeat was carried: the test shows nothing")
	}
}

// carriedSetup is a clone holding C1, C2, C3 (TTL a minute, heartbeated
// at start), with C2's and C3's agents' heartbeats at start+20s noted,
// not pushed; the clock at start+31s, when C1's next heartbeat pushes.
func carriedSetup(t *testing.T) (*world, *fakeClock, time.Time, *ledger.Backlog, map[string]int64) {
	w := newWorld(t)
	start := time.Now().UTC().Truncate(time.Second)
	clk := &fakeClock{now: start}
	b, epochs := fleet(t, w, clk, time.Minute, "C1", "C2", "C3")
	clk.set(start.Add(20 * time.Second))
	for _, id := range []string{"C2", "C3"} {
		if beat(t, b, id, "agent-"+id, epochs[id], true) {
			t.Fatalf("%s's heartbeat 20s after the last pushed", id)
		}
	}
	clk.set(start.Add(31 * time.Second))
	return w, clk, start, b, epochs
}

func lastBeat(t *testing.T, st *ledger.State, id string) time.Time {
	t.Helper()
	c, _ := st.Card(id)
	if c.LastHeartbeatAt == nil {
		t.Fatalf("%s has no heartbeat", id)
	}
	return c.LastHeartbeatAt.UTC().Truncate(time.Second) // the fleet's stamps are a few ns apart
}

func localState(t *testing.T, b *ledger.Backlog) *ledger.State {
	t.Helper()
	var out *ledger.State
	if err := b.View(func(st *ledger.State, _ time.Time) error { out = st; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// A carried heartbeat whose lease ref moved since the fetch is left out of
// the push: the lease write that pushes lands, and the moved card keeps
// what moved it (here C2's own heartbeat with progress, whose push
// carried C3's).
func TestCarriedHeartbeatRefMoved(t *testing.T) {
	w, clk, start, b, epochs := carriedSetup(t)
	s := syncer(t, b, Options{Remote: "origin", Actor: "agent-C1"})
	s.beforeLeasePush = func(card string, _ int) {
		if card == "C1" {
			p := 50
			leaseBeat(t, b, "C2", "agent-C2", epochs["C2"], &p) // C2's ref moves
		}
	}
	_, res, err := s.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "agent-C1", RequestID: rid}, ID: "C1", Owner: "agent-C1", Epoch: epochs["C1"]})
	})
	if err != nil {
		t.Fatal(err)
	}
	// C2's own push carried C3's noted heartbeat, so both refs moved.
	if res.Carried != 0 {
		t.Errorf("carried %d heartbeats, want none", res.Carried)
	}
	up := remoteState(t, w, clk)
	c2, _ := up.Card("C2")
	if got := lastBeat(t, up, "C1"); !got.Equal(start.Add(31 * time.Second)) {
		t.Errorf("C1 heartbeated at %s, want 31s", got.Sub(start))
	}
	if got := lastBeat(t, up, "C3"); !got.Equal(start.Add(20 * time.Second)) {
		t.Errorf("C3 heartbeated at %s, want 20s (carried)", got.Sub(start))
	}
	if got := lastBeat(t, up, "C2"); !got.Equal(start.Add(31*time.Second)) || c2.Progress == nil || *c2.Progress != 50 {
		t.Errorf("C2 heartbeated at %s progress %v, want its own heartbeat at 31s with progress 50", got.Sub(start), c2.Progress)
	}
}

// A carried heartbeat the remote refuses (here a hook refusing its ref)
// fails neither the lease write that pushes nor the other carried
// heartbeat, and is not taken as written, here or on the remote.
func TestCarriedHeartbeatRefused(t *testing.T) {
	w, clk, start, b, epochs := carriedSetup(t)
	hook := "#!/bin/sh\ncase \"$1\" in */C2) echo 'no writes to C2 here' >&2; exit 1;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(w.bare, "hooks", "update"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	res := leaseBeat(t, b, "C1", "agent-C1", epochs["C1"], nil)
	if res.Carried != 1 {
		t.Errorf("carried %d heartbeats, want 1 (C3)", res.Carried)
	}
	up, local := remoteState(t, w, clk), localState(t, b)
	for where, st := range map[string]*ledger.State{"the remote": up, "this clone": local} {
		if got := lastBeat(t, st, "C1"); !got.Equal(start.Add(31 * time.Second)) {
			t.Errorf("%s: C1 heartbeated at %s, want 31s", where, got.Sub(start))
		}
		if got := lastBeat(t, st, "C3"); !got.Equal(start.Add(20 * time.Second)) {
			t.Errorf("%s: C3 heartbeated at %s, want 20s (carried)", where, got.Sub(start))
		}
		if got := lastBeat(t, st, "C2"); !got.Equal(start) {
			t.Errorf("%s: C2 heartbeated at %s, want 0s: its carried heartbeat was refused", where, got.Sub(start))
		}
	}
}
