package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// fencedOps are the calls a lease holder makes; each must be refused with
// ErrFenced for a holder that lost the lease.
func fencedOps(id, owner string, epoch int64) map[string]func(e *env) error {
	return map[string]func(e *env) error{
		"heartbeat": doHeartbeat(HeartbeatRequest{ID: id, Owner: owner, Epoch: epoch, Progress: intp(50)}),
		"release":   doLease(OpRelease, id, owner, epoch),
		"complete":  doLease(OpComplete, id, owner, epoch),
		"block":     doLease(OpBlock, id, owner, epoch),
	}
}

func TestFencingStaleOwnerAfterExpiry(t *testing.T) {
	for name, op := range fencedOps("A", "w1", 1) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.create("A")
			e.claim("A", "w1", 30*time.Second)
			e.clk.Advance(31 * time.Second)
			e.claim("A", "w2", 30*time.Second) // w1 was paused past its TTL
			want := e.card("A")
			err := e.unchanged(ErrFenced, op)
			if !strings.Contains(err.Error(), "w1 does not hold A") || !strings.Contains(err.Error(), "w2 (epoch 2)") {
				t.Fatalf("message does not say who holds the card: %v", err)
			}
			if got := e.card("A"); mustJSON(t, got) != mustJSON(t, want) {
				t.Fatalf("card changed:\n%s\n%s", mustJSON(t, want), mustJSON(t, got))
			}
			// Without an epoch the stale owner is still not the holder.
			e.unchanged(ErrFenced, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1"}))
			// The new holder is unaffected.
			e.appendsOne(OpHeartbeat, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w2", Epoch: 2}))
		})
	}
}

func TestFencingStaleEpochSameOwner(t *testing.T) {
	for name, op := range fencedOps("A", "w1", 1) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.create("A")
			e.claim("A", "w1", time.Minute)
			// A restarted incarnation of w1 re-claims and fences out the old one.
			c := e.claim("A", "w1", time.Minute)
			if c.ClaimEpoch != 2 || c.Attempts != 1 {
				t.Fatalf("re-claim = epoch %d attempts %d", c.ClaimEpoch, c.Attempts)
			}
			err := e.unchanged(ErrFenced, op)
			if !strings.Contains(err.Error(), "epoch 1 of A is stale") {
				t.Fatalf("message does not name the stale epoch: %v", err)
			}
			// The current incarnation, at epoch 2, is not fenced.
			e.appendsOne(Op(name), fencedOps("A", "w1", 2)[name])
		})
	}
}

func TestFencingAfterReclaimAndReclaimBySameOwner(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.claim("A", "w1", time.Minute)
	e.clk.Advance(time.Hour)
	cards, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m})
	if err != nil || len(cards) != 1 || cards[0].Status != StatusReady {
		t.Fatalf("reclaim = %+v, %v", cards, err)
	}
	e.unchanged(ErrFenced, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}))
	e.clk.Advance(time.Minute) // the expired lease backed the card off
	c := e.claim("A", "w1", time.Minute)
	if c.ClaimEpoch != 2 || c.Attempts != 2 {
		t.Fatalf("claim after reclaim = epoch %d attempts %d", c.ClaimEpoch, c.Attempts)
	}
	e.unchanged(ErrFenced, doLease(OpComplete, "A", "w1", 1))
	e.appendsOne(OpComplete, doLease(OpComplete, "A", "w1", 2))
}

func TestAttempts(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	step := func(what string, wantAttempts int, wantEpoch int64) {
		t.Helper()
		c := e.card("A")
		if c.Attempts != wantAttempts || c.ClaimEpoch != wantEpoch {
			t.Fatalf("after %s: attempts %d epoch %d, want %d and %d", what, c.Attempts, c.ClaimEpoch, wantAttempts, wantEpoch)
		}
	}
	step("create", 0, 0)
	e.claim("A", "w1", time.Minute)
	step("claim from ready", 1, 1)
	for i := 0; i < 3; i++ {
		e.clk.Advance(10 * time.Second)
		e.appendsOne(OpHeartbeat, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}))
	}
	step("heartbeats", 1, 1)
	e.claim("A", "w1", time.Minute)
	step("re-claim of own live lease", 1, 2)
	e.appendsOne(OpRelease, doLease(OpRelease, "A", "w1", 2))
	step("release", 1, 2)
	e.claim("A", "w1", time.Minute)
	step("claim after release by the same owner", 2, 3)
	e.appendsOne(OpRelease, doLease(OpRelease, "A", "w1", 3))
	e.claim("A", "w2", time.Minute)
	step("claim after release by a new owner", 3, 4)
	e.clk.Advance(2 * time.Minute)
	e.claim("A", "w3", time.Minute)
	step("claim of an expired lease", 4, 5)

	// A replayed claim answers from the ledger and counts nothing.
	before := e.bytes()
	for i := 0; i < 3; i++ {
		c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: rid("claim-1"), ID: "A", Owner: "w3", TTL: time.Minute})
		if err != nil || c == nil {
			t.Fatalf("claim with request id: %+v, %v", c, err)
		}
		if i == 0 {
			before = e.bytes()
		}
	}
	if len(e.bytes()) != len(before) {
		t.Fatal("a replayed claim appended")
	}
	step("re-claim by the same owner and its replays", 4, 6)
}

func TestMaxAttemptsOnRelease(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.MaxAttempts = 2 })
	e.claim("A", "w1", time.Minute)
	e.appendsOne(OpRelease, doLease(OpRelease, "A", "w1", 1))
	if c := e.card("A"); c.Status != StatusReady || c.Attempts != 1 {
		t.Fatalf("after first release: %+v", c)
	}
	e.claim("A", "w2", time.Minute)
	c, err := e.b.Release(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w2", Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != StatusBlocked || c.BlockedReason != "max attempts reached (2 of 2)" || c.ClaimOwner != "" {
		t.Fatalf("exhausted card after release = %+v", c)
	}
	e.unchanged(ErrConflict, doClaim("A", "w3", time.Minute))

	c, err = e.b.Unblock(e.ctx, m, "A")
	if err != nil || c.Status != StatusReady || c.Attempts != 0 || c.BlockedReason != "" {
		t.Fatalf("unblock = %+v, %v", c, err)
	}
	if got := e.claim("A", "w3", time.Minute); got.Attempts != 1 || got.ClaimEpoch != 3 {
		t.Fatalf("claim after unblock = attempts %d epoch %d", got.Attempts, got.ClaimEpoch)
	}
}

func TestMaxAttemptsOnReclaim(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.MaxAttempts = 1 })
	e.create("B", func(r *CreateRequest) { r.MaxAttempts = 1 })
	e.claim("A", "w1", time.Minute)
	e.claim("B", "w1", time.Minute)
	e.clk.Advance(2 * time.Minute)

	// An exhausted expired card cannot be taken by anyone else.
	e.unchanged(ErrConflict, doClaim("A", "w2", time.Minute))
	if c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w2"}); err != nil || c != nil {
		t.Fatalf("claim of the best card = %+v, %v; want nothing", c, err)
	}

	cards, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m, ID: "A"})
	if err != nil || len(cards) != 1 {
		t.Fatalf("reclaim = %+v, %v", cards, err)
	}
	if c := cards[0]; c.Status != StatusBlocked || !strings.Contains(c.BlockedReason, "max attempts") {
		t.Fatalf("reclaimed exhausted card = %+v", c)
	}
	cards, err = e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m})
	if err != nil || len(cards) != 1 || cards[0].ID != "B" || cards[0].Status != StatusBlocked {
		t.Fatalf("reclaim of all expired = %+v, %v", cards, err)
	}
	for _, id := range []string{"A", "B"} {
		if _, err := e.b.Unblock(e.ctx, m, id); err != nil {
			t.Fatal(err)
		}
		if c := e.claim(id, "w2", time.Minute); c.Attempts != 1 {
			t.Fatalf("%s attempts after unblock and claim = %d", id, c.Attempts)
		}
	}
}

func TestReopenResetsAttempts(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.MaxAttempts = 1 })
	e.claim("A", "w1", time.Minute)
	e.appendsOne(OpComplete, doLease(OpComplete, "A", "w1", 1))
	c, err := e.b.Reopen(e.ctx, m, "A")
	if err != nil || c.Attempts != 0 || c.Status != StatusReady || c.ClaimEpoch != 1 {
		t.Fatalf("reopen = %+v, %v", c, err)
	}
	if c := e.claim("A", "w2", time.Minute); c.ClaimEpoch != 2 || c.Attempts != 1 {
		t.Fatalf("claim after reopen = %+v", c)
	}
}

func TestReclaimAll(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"A", "B", "C", "D"} {
		e.create(id)
	}
	e.claim("B", "w1", 10*time.Second)
	e.claim("A", "w2", 10*time.Second)
	e.claim("C", "w3", time.Hour)
	before := e.bytes()
	cards, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m})
	if err != nil || len(cards) != 0 || len(e.bytes()) != len(before) {
		t.Fatalf("reclaim with nothing expired = %+v, %v", cards, err)
	}
	e.clk.Advance(11 * time.Second)
	n := len(e.lines())
	cards, err = e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m, Reason: "agent died"})
	if err != nil || len(cards) != 2 || cards[0].ID != "A" || cards[1].ID != "B" {
		t.Fatalf("reclaim = %+v, %v", cards, err)
	}
	if got := len(e.lines()); got != n+2 {
		t.Fatalf("reclaim of two cards appended %d lines", got-n)
	}
	for _, c := range cards {
		if c.Status != StatusReady || c.ClaimOwner != "" || c.ClaimEpoch != 1 {
			t.Fatalf("reclaimed %+v", c)
		}
	}
	if ev := e.lastEvent(); ev.Reason != "agent died" || ev.Force {
		t.Fatalf("reclaim event = %+v", ev)
	}
	if c := e.card("C"); c.Status != StatusClaimed || c.ClaimOwner != "w3" {
		t.Fatalf("live lease was reclaimed: %+v", c)
	}
	if _, err := Open(e.dir, Options{}); err != nil {
		t.Fatalf("ledger with a multi-event append does not reopen: %v", err)
	}
}

// TestReclaimEventValidation applies reclaim events directly: the fold only
// honours a reclaim that names the current epoch, and without force only an
// expired lease.
func TestReclaimEventValidation(t *testing.T) {
	s := fold.NewState()
	mk := func(at time.Time, op Op, mod func(*Event)) *Event {
		e := &Event{V: 1, ID: at.Format(time.RFC3339Nano), At: at, Actor: "a", Op: op, Card: "A"}
		mod(e)
		return e
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Apply(mk(t0, OpCreate, func(e *Event) { e.Fields = &Fields{Title: strp("a")} })))
	must(s.Apply(mk(t0.Add(1), OpClaim, func(e *Event) { e.Owner, e.TTLSeconds, e.Epoch, e.ExpectVersion = "w", 60, 1, 1 })))
	live := t0.Add(time.Second)
	if err := s.Apply(mk(live, OpReclaim, func(e *Event) { e.Epoch = 1 })); !errors.Is(err, ErrConflict) {
		t.Fatalf("unforced reclaim of a live lease: %v", err)
	}
	if err := s.Apply(mk(live.Add(1), OpReclaim, func(e *Event) { e.Epoch, e.Force = 0, true })); !errors.Is(err, ErrConflict) {
		t.Fatalf("reclaim naming an old epoch: %v", err)
	}
	if err := s.Apply(mk(t0.Add(time.Minute), OpReclaim, func(e *Event) { e.Epoch = 1 })); !errors.Is(err, ErrConflict) {
		t.Fatalf("reclaim 1ns before the lease runs out: %v", err)
	}
	// The lease ends at claimed_at + ttl exactly.
	must(s.Apply(mk(t0.Add(time.Minute+1), OpReclaim, func(e *Event) { e.Epoch = 1 })))
	if c, _ := s.Card("A"); c.Status != StatusReady {
		t.Fatalf("after reclaim: %+v", c)
	}
}

func TestClaimOrder(t *testing.T) {
	e := newEnv(t)
	e.create("low")
	e.clk.Advance(time.Second)
	e.create("z-hi-old", func(r *CreateRequest) { r.Priority = 5 })
	e.clk.Advance(time.Second)
	e.create("a-hi-new", func(r *CreateRequest) { r.Priority = 5 })
	e.create("neg", func(r *CreateRequest) { r.Priority = -3 })
	e.create("dep", func(r *CreateRequest) { r.Priority = 9; r.DependsOn = []string{"low"} })
	e.create("blocked", func(r *CreateRequest) { r.Priority = 9 })
	e.create("done", func(r *CreateRequest) { r.Priority = 9 })
	e.create("later", func(r *CreateRequest) { r.Priority = 9; r.DeferUntil = t0.Add(time.Hour) })
	if _, err := e.b.Block(e.ctx, LeaseRequest{Mutation: m, ID: "blocked", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "done"}); err != nil {
		t.Fatal(err)
	}
	ready, err := e.b.Ready(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ready); got != "z-hi-old a-hi-new low neg" {
		t.Fatalf("ready = %s", got)
	}

	claimNext := func(owner string) string {
		t.Helper()
		c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: owner, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			return "<nil>"
		}
		if c.ClaimOwner != owner || c.Status != StatusClaimed {
			t.Fatalf("claimed %+v", c)
		}
		return c.ID
	}
	for i, want := range []string{"z-hi-old", "a-hi-new", "low", "neg"} {
		if got := claimNext("w" + string(rune('1'+i))); got != want {
			t.Fatalf("claim %d took %s, want %s", i+1, got, want)
		}
	}
	// Nothing is claimable: nil, no error, nothing written.
	before := e.bytes()
	if got := claimNext("w9"); got != "<nil>" {
		t.Fatalf("claim took %s, want nothing", got)
	}
	if len(e.bytes()) != len(before) {
		t.Fatal("an empty claim appended")
	}
	// Completing the dependency frees dep.
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "low", Owner: "w3", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if got := claimNext("w9"); got != "dep" {
		t.Fatalf("claim took %s, want dep", got)
	}
	// Leases run out; the expired card with the best order goes to a new
	// owner at the next epoch.
	e.clk.Advance(2 * time.Minute)
	c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w10", TTL: 2 * time.Hour})
	if err != nil || c == nil || c.ID != "dep" || c.ClaimEpoch != 2 || c.Attempts != 2 {
		t.Fatalf("claim of expired = %+v, %v", c, err)
	}
	// Once defer_until has passed the deferred card is claimable.
	e.clk.Set(t0.Add(time.Hour))
	if c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w11", TTL: time.Minute}); err != nil || c == nil || c.ID != "later" {
		t.Fatalf("claim after defer = %+v, %v", c, err)
	}
}

func ids(cards []Card) string {
	var out []string
	for _, c := range cards {
		out = append(out, c.ID)
	}
	return strings.Join(out, " ")
}

// TestClaimOrderTieBreak builds cards with equal priority and creation time,
// as a merge of two clones can, to check the id tie-break.
func TestClaimOrderTieBreak(t *testing.T) {
	s := fold.NewState()
	at := t0
	for i, id := range []string{"c", "a", "b", "old-z"} {
		a := at
		if id == "old-z" {
			a = at.Add(-time.Second)
		}
		if err := s.Apply(&Event{V: 1, ID: string(rune('a' + i)), At: a, Actor: "x", Op: OpCreate, Card: id, Fields: &Fields{Title: strp(id)}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(s.List(Filter{Ready: true}, at, SortClaim)); got != "old-z a b c" {
		t.Fatalf("claim order = %s", got)
	}
	if c := s.Pick(Filter{}, at); c == nil || c.ID != "old-z" {
		t.Fatalf("pick = %+v", c)
	}
}

func TestClaimFilters(t *testing.T) {
	e := newEnv(t)
	e.create("d1", func(r *CreateRequest) { r.Phase = "design"; r.Labels = []string{"ui"} })
	e.create("d2", func(r *CreateRequest) { r.Phase = "design"; r.Priority = 1 })
	e.create("b1", func(r *CreateRequest) { r.Phase = "build"; r.Labels = []string{"ui", "api"}; r.Priority = 9 })
	n := 0
	claim := func(phase, label string) string {
		t.Helper()
		before := e.bytes()
		n++
		c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w" + string(rune('0'+n)), Phase: phase, Label: label, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			if len(e.bytes()) != len(before) {
				t.Fatal("an empty claim appended")
			}
			return "<nil>"
		}
		if (phase != "" && c.Phase != phase) || (label != "" && !strings.Contains(strings.Join(c.Labels, ","), label)) {
			t.Fatalf("claim with phase %q label %q took %+v", phase, label, c)
		}
		return c.ID
	}
	steps := []struct{ phase, label, want string }{
		{"design", "", "d2"},
		{"design", "ui", "d1"},
		{"design", "", "<nil>"},
		{"", "api", "b1"},
		{"qa", "", "<nil>"},
		{"", "nope", "<nil>"},
	}
	for i, s := range steps {
		if got := claim(s.phase, s.label); got != s.want {
			t.Fatalf("step %d: claim phase %q label %q took %s, want %s", i, s.phase, s.label, got, s.want)
		}
	}
}

// TestClaimInvalidRequest covers request errors caught before any lock.
func TestClaimInvalidRequest(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w", TTL: 999 * time.Millisecond})
		return err
	})
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "", TTL: time.Minute})
		return err
	})
	// Default TTL is 15 minutes.
	c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w"})
	if err != nil || c == nil || c.ClaimTTLSeconds != int64(DefaultTTL/time.Second) || !c.LeaseExpiresAt.Equal(c.ClaimedAt.Add(DefaultTTL)) {
		t.Fatalf("claim with default ttl = %+v, %v", c, err)
	}
}

// TestTimestampsNeverGoBackwards sets the clock back between writes: events
// still carry strictly increasing times and the ledger reopens.
func TestTimestampsNeverGoBackwards(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.clk.Set(t0.Add(-time.Hour))
	e.create("B")
	e.clk.Set(t0.Add(-2 * time.Hour))
	e.claim("B", "w", time.Minute)
	evs := e.events()
	for i := 1; i < len(evs); i++ {
		if !evs[i].At.After(evs[i-1].At) {
			t.Fatalf("event %d at %s is not after %s", i+1, evs[i].At, evs[i-1].At)
		}
		if evs[i].At.Location() != time.UTC {
			t.Fatalf("event time %s is not UTC", evs[i].At)
		}
	}
	if _, err := Open(e.dir, Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestListAndStats(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Phase = "p"; r.Labels = []string{"x"} })
	e.clk.Advance(time.Minute)
	e.create("B", func(r *CreateRequest) { r.Priority = 2 })
	e.create("C", func(r *CreateRequest) { r.Phase = "q" })
	e.create("D")
	e.claim("B", "w1", time.Minute)
	e.claim("C", "w2", time.Hour)
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "D"}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Minute)

	cases := []struct {
		f    Filter
		sort string
		want string
	}{
		{Filter{}, "", "B A C D"},
		{Filter{}, SortID, "A B C D"},
		{Filter{}, fold.SortCreated, "A B C D"},
		{Filter{}, fold.SortUpdated, "D C B A"},
		{Filter{Status: []Status{StatusClaimed}}, SortID, "B C"},
		{Filter{Owner: "w2"}, "", "C"},
		{Filter{Phase: "p"}, "", "A"},
		{Filter{Phases: []string{"q", "p"}}, SortID, "A C"},
		{Filter{Phase: "p", Phases: []string{"q"}}, SortID, "A C"},
		{Filter{Phases: []string{"q"}}, "", "C"},
		{Filter{Phases: []string{"none"}}, "", ""},
		{Filter{Label: "x"}, "", "A"},
		{Filter{Ready: true}, "", "B A"},
		{Filter{Limit: 2}, SortID, "A B"},
	}
	for _, tc := range cases {
		got, err := e.b.List(tc.f, tc.sort)
		if err != nil {
			t.Fatal(err)
		}
		if ids(got) != tc.want {
			t.Errorf("List(%+v, %q) = %s, want %s", tc.f, tc.sort, ids(got), tc.want)
		}
	}
	if _, err := e.b.List(Filter{}, "random"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown sort: %v", err)
	}
	st, err := e.b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Cards != 4 || st.ByStatus[StatusClaimed] != 2 || st.ByStatus[StatusDone] != 1 || st.ByStatus[StatusReady] != 1 ||
		st.Claimable != 2 || st.ExpiredClaims != 1 || st.OldestReadyID != "A" || st.Events != 7 ||
		st.LedgerBytes != int64(len(e.bytes())) || st.OldestReadyAge < 180 {
		t.Fatalf("stats = %+v", st)
	}
	if got := e.b.held().Expired(e.clk.Now()); strings.Join(got, ",") != "B" {
		t.Fatalf("expired = %v", got)
	}
	if _, err := e.b.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
}

// TestReturnedCardsAreCopies checks that callers cannot change the state
// through a returned card.
func TestReturnedCardsAreCopies(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Labels = []string{"x"} })
	c := e.card("A")
	c.Labels[0] = "mutated"
	list, _ := e.b.List(Filter{}, "")
	list[0].Labels[0] = "mutated"
	if got := e.card("A").Labels[0]; got != "x" {
		t.Fatalf("state was changed through a returned card: %q", got)
	}
}

// TestClaimNeverPicksALiveLease: a second claim without an id gets another
// card, not the one the owner already holds; claim by id renews it.
func TestClaimNeverPicksALiveLease(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Priority = 9 })
	e.create("B")
	first, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w", TTL: time.Minute})
	if err != nil || first == nil || first.ID != "A" {
		t.Fatalf("first claim = %+v, %v", first, err)
	}
	second, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w", TTL: time.Minute})
	if err != nil || second == nil || second.ID != "B" {
		t.Fatalf("second claim = %+v, %v", second, err)
	}
	third, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w", TTL: time.Minute})
	if err != nil || third != nil {
		t.Fatalf("third claim = %+v, %v", third, err)
	}
	renewed := e.claim("A", "w", time.Minute)
	if renewed.ClaimEpoch != 2 || renewed.Attempts != 1 {
		t.Fatalf("renewal = epoch %d attempts %d", renewed.ClaimEpoch, renewed.Attempts)
	}
}
