package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

const year = 365 * 24 * time.Hour

// skewEnv is a backlog on a correct fake clock into which a machine whose
// clock runs a year ahead has written one event (card F).
func skewEnv(t *testing.T, warn func(string)) *env {
	t.Helper()
	e := newEnv(t)
	e.b.Close()
	e.b = nil
	fast, err := Open(e.dir, Options{Clock: func() time.Time { return t0.Add(year) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fast.Create(e.ctx, CreateRequest{Mutation: Mutation{Actor: "fastclock"}, ID: "F", Title: "from a fast clock"}); err != nil {
		t.Fatal(err)
	}
	fast.Close()
	b, err := Open(e.dir, Options{Clock: e.clk.Now, LockTimeout: 5 * time.Second, Warn: warn})
	if err != nil {
		t.Fatal(err)
	}
	e.b = b
	return e
}

// TestLeaseEndsByClaimersClock: after one event stamped a year ahead, a
// two-second claim by a writer with a correct clock ends two seconds later
// by that clock, not a year later.
func TestLeaseEndsByClaimersClock(t *testing.T) {
	e := skewEnv(t, nil)
	e.create("A")
	c := e.claim("A", "w1", 2*time.Second)
	now := e.clk.Now()
	if c.LeaseExpiresAt == nil || !c.LeaseExpiresAt.Equal(now.Add(2*time.Second)) {
		t.Fatalf("lease_expires_at = %v, want %v", c.LeaseExpiresAt, now.Add(2*time.Second))
	}
	if !c.ClaimedAt.Equal(now) || !c.UpdatedAt.Equal(now) {
		t.Fatalf("claimed_at %v, updated_at %v, want %v", c.ClaimedAt, c.UpdatedAt, now)
	}
	ev := e.lastEvent()
	if ev.Clock == nil || !ev.Clock.Equal(now) || !ev.At.After(t0.Add(year)) {
		t.Fatalf("claim event at %v clock %v, want stamped after the fast event and carrying %v", ev.At, ev.Clock, now)
	}

	// One second in, the lease is live for everyone but its owner.
	e.clk.Advance(time.Second)
	e.unchanged(ErrConflict, func(e *env) error {
		_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w2", TTL: time.Minute})
		return err
	})
	if got, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m}); err != nil || len(got) != 0 {
		t.Fatalf("reclaim of a live lease: %v, %v", got, err)
	}

	// Two seconds in, it has ended.
	e.clk.Advance(time.Second)
	c2, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w2", TTL: time.Minute})
	if err != nil || c2 == nil || c2.ClaimOwner != "w2" || c2.ClaimEpoch != 2 {
		t.Fatalf("claim after the lease ended: %+v, %v", c2, err)
	}
	// A fresh handle folds the file to the same lease.
	fresh := e.open()
	defer fresh.Close()
	got, err := fresh.Get("A")
	if err != nil || !got.LeaseExpiresAt.Equal(*c2.LeaseExpiresAt) {
		t.Fatalf("reopened lease %v, %v; want %v", got.LeaseExpiresAt, err, c2.LeaseExpiresAt)
	}
}

// TestLiveLeaseNotExpiredByAStampAhead: a lease taken before the fast event
// is not taken over by a claim whose stamp is a year ahead, while the
// claimer's clock says the lease runs.
func TestLiveLeaseNotExpiredByAStampAhead(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.claim("A", "w1", time.Hour)
	e.clk.Advance(time.Minute)
	fast, err := Open(e.dir, Options{Clock: func() time.Time { return t0.Add(year) }})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	if _, _, err := fast.Create(e.ctx, CreateRequest{Mutation: m, ID: "F", Title: "fast"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"A", ""} {
		c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: id, Owner: "w2", TTL: time.Minute})
		if id == "A" && !errors.Is(err, ErrConflict) || id == "" && c != nil && c.ID == "A" {
			t.Fatalf("claim %q by w2 during w1's lease: %+v, %v", id, c, err)
		}
	}
	if got, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m}); err != nil || len(got) != 0 {
		t.Fatalf("reclaim during a live lease: %v, %v", got, err)
	}
	if c := e.card("A"); c.ClaimOwner != "w1" || c.ClaimEpoch != 1 {
		t.Fatalf("card A = %s epoch %d, want w1 epoch 1", c.ClaimOwner, c.ClaimEpoch)
	}
	// The heartbeat renews by the owner's clock too.
	c, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 1})
	now := e.clk.Now()
	if err != nil || !c.LastHeartbeatAt.Equal(now) || !c.LeaseExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("heartbeat: %+v, %v", c, err)
	}
	d, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 1})
	if err != nil || !d.ClosedAt.Equal(e.clk.Now()) {
		t.Fatalf("complete: closed_at %v, %v", d.ClosedAt, err)
	}
}

// TestDeferByClock: defer_until is judged by the claimer's clock, not by a
// stamp pushed a year ahead.
func TestDeferByClock(t *testing.T) {
	e := skewEnv(t, nil)
	e.create("D", func(r *CreateRequest) { r.DeferUntil = t0.Add(time.Hour) })
	if c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "D", Owner: "w", TTL: time.Minute}); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim before defer_until: %+v, %v", c, err)
	}
	e.clk.Advance(time.Hour)
	if c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "D", Owner: "w", TTL: time.Minute}); err != nil || c == nil || c.ID != "D" {
		t.Fatalf("claim after defer_until: %+v, %v", c, err)
	}
}

// TestClockSkewWarnsOnce: a writer finding events ahead of its clock says
// so once, naming how far ahead and the newest stamp; a writer with no
// such events says nothing.
func TestClockSkewWarnsOnce(t *testing.T) {
	var msgs []string
	e := skewEnv(t, func(s string) { msgs = append(msgs, s) })
	e.create("A")
	e.create("B")
	e.claim("A", "w", time.Minute)
	if len(msgs) != 1 {
		t.Fatalf("%d warnings, want 1: %q", len(msgs), msgs)
	}
	for _, want := range []string{"ahead of this machine's clock", "365.0 days", "2027-01-02T03:04:05Z"} {
		if !strings.Contains(msgs[0], want) {
			t.Fatalf("warning %q does not say %q", msgs[0], want)
		}
	}

	var none []string
	plain := newEnv(t)
	b, err := Open(plain.dir, Options{Clock: plain.clk.Now, Warn: func(s string) { none = append(none, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	plain.b = b
	plain.create("A")
	plain.clk.Advance(-wire.MaxClockSkew / 2) // within the bound: no clock, no warning
	plain.create("B")
	if len(none) != 0 || plain.lastEvent().Clock != nil {
		t.Fatalf("warnings %q, clock %v; want none", none, plain.lastEvent().Clock)
	}
}

// TestDoctorListsFutureEvents: doctor names the event a fast clock wrote
// and says how far the stamps run ahead, also once compaction has folded
// the event into the snapshot.
func TestDoctorListsFutureEvents(t *testing.T) {
	e := skewEnv(t, nil)
	e.create("A")
	near := func(got float64, want time.Duration) bool {
		return got > (want-time.Minute).Seconds() && got <= want.Seconds()
	}
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.FutureEvents) != 1 || rep.FutureEvents[0].Card != "F" || rep.FutureEvents[0].Actor != "fastclock" {
		t.Fatalf("future events %+v", rep.FutureEvents)
	}
	if !near(rep.FutureEvents[0].AheadSeconds, year) || !near(rep.StampsAheadSeconds, year) {
		t.Fatalf("ahead %v s, stamps ahead %v s, want about a year", rep.FutureEvents[0].AheadSeconds, rep.StampsAheadSeconds)
	}
	// A year later this machine's clock has caught up.
	if rep, err := Diagnose(e.dir, t0.Add(year)); err != nil || len(rep.FutureEvents) != 0 || rep.StampsAheadSeconds != 0 {
		t.Fatalf("a year later: %+v, %v", rep, err)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := Diagnose(e.dir, e.clk.Now()); err != nil || len(rep.FutureEvents) != 0 || !near(rep.StampsAheadSeconds, year) {
		t.Fatalf("after compaction: %+v, %v", rep, err)
	}
}

// TestClockFoldDeterministic: the fold takes times from the events only:
// two folds of the same file, the writer's own state, and the state after
// compaction and a reload agree.
func TestClockFoldDeterministic(t *testing.T) {
	e := skewEnv(t, nil)
	e.create("A")
	e.create("B", func(r *CreateRequest) { r.DeferUntil = t0.Add(time.Minute) })
	e.claim("A", "w1", 2*time.Second)
	e.clk.Advance(3 * time.Second)
	e.claim("A", "w2", time.Minute)
	if _, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "w2", Epoch: 2, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var writer string
	if err := e.b.view(func(s *fold.State, _ time.Time) error { writer = stateJSON(t, s); return nil }); err != nil {
		t.Fatal(err)
	}
	one, two := stateJSON(t, foldFile(t, e.ledgerPath())), stateJSON(t, foldFile(t, e.ledgerPath()))
	if one != two || one != writer {
		t.Fatalf("folds differ:\n%s\n%s\nwriter %s", one, two, writer)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	fresh := e.open()
	defer fresh.Close()
	var after string
	if err := fresh.view(func(s *fold.State, _ time.Time) error { after = stateJSON(t, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if after != one {
		t.Fatalf("after compaction:\n%s\nwant\n%s", after, one)
	}
}

// TestRebaseKeepsTheClock: a local claim re-stamped after upstream's fast
// event keeps the time its writer decided at, so the lease keeps its end.
func TestRebaseKeepsTheClock(t *testing.T) {
	up := newEnv(t)
	fast, err := Open(up.dir, Options{Clock: func() time.Time { return t0.Add(year) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fast.Create(up.ctx, CreateRequest{Mutation: m, ID: "F", Title: "fast"}); err != nil {
		t.Fatal(err)
	}
	fast.Close()
	local := newEnv(t)
	local.create("A")
	c := local.claim("A", "w", 2*time.Second)
	upTree, err := ReadTree(up.dir)
	if err != nil {
		t.Fatal(err)
	}
	localTree, err := ReadTree(local.dir)
	if err != nil {
		t.Fatal(err)
	}
	out, res, err := rebase(upTree, localTree)
	if err != nil || res.Restamped != 2 || res.Conflicts != 0 {
		t.Fatalf("rebase: %+v, %v", res, err)
	}
	s, err := out.fold(true)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Card("A")
	if !got.LeaseExpiresAt.Equal(*c.LeaseExpiresAt) || !got.CreatedAt.Equal(t0) {
		t.Fatalf("rebased lease ends %v (created %v), want %v", got.LeaseExpiresAt, got.CreatedAt, c.LeaseExpiresAt)
	}
	evs, err := out.Events()
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Clock == nil || !last.At.After(t0.Add(year)) {
		t.Fatalf("rebased claim at %v clock %v", last.At, last.Clock)
	}
}
