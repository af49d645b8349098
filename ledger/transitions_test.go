package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// The states card A can be in before a transition is tried. B always exists
// and is ready.
const (
	stReady   = "ready"
	stClaimed = "claimed" // by w1, epoch 1, 60s lease, live
	stExpired = "expired" // by w1, epoch 1, lease ran out, not retaken
	stBlocked = "blocked"
	stDone    = "done"
	stLinked  = "linked" // ready, depends on B
	stAbsent  = "absent" // no card A
)

func setupState(t *testing.T, state string) *env {
	t.Helper()
	e := newEnv(t)
	e.create("B")
	if state == stAbsent {
		return e
	}
	e.create("A")
	switch state {
	case stReady:
	case stClaimed:
		e.claim("A", "w1", time.Minute)
	case stExpired:
		e.claim("A", "w1", time.Minute)
		e.clk.Advance(2 * time.Minute)
	case stBlocked:
		if _, err := e.b.Block(e.ctx, LeaseRequest{Mutation: m, ID: "A", Reason: "waiting on vendor"}); err != nil {
			t.Fatal(err)
		}
	case stDone:
		if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "A", Reason: "shipped"}); err != nil {
			t.Fatal(err)
		}
	case stLinked:
		if _, err := e.b.Link(e.ctx, m, "A", "B"); err != nil {
			t.Fatal(err)
		}
	case stDeleted:
		if _, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "A", Reason: "dup"}); err != nil {
			t.Fatal(err)
		}
	case stReview:
		e.claim("A", "w1", time.Minute)
		if _, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: worker, ID: "A", Owner: "w1", Epoch: 1, Reason: "see the branch", Commit: "4f2a9c1", Branch: "bl/A"}); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown state %q", state)
	}
	return e
}

type transition struct {
	name  string
	state string
	prep  func(e *env) // more setup, not measured
	op    Op           // the op a legal transition appends
	do    func(e *env) error
	want  error                      // nil: legal
	check func(t *testing.T, c Card) // card A after a legal transition
}

func doCreate(r CreateRequest) func(e *env) error {
	return func(e *env) error {
		if r.Actor == "" {
			r.Mutation = m
		}
		_, _, err := e.b.Create(e.ctx, r)
		return err
	}
}

func doUpdate(id string, f Fields) func(e *env) error {
	return func(e *env) error {
		_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: id, Fields: f})
		return err
	}
}

func doClaim(id, owner string, ttl time.Duration) func(e *env) error {
	return func(e *env) error {
		c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: id, Owner: owner, TTL: ttl})
		if err == nil && c == nil {
			return errors.New("claim by id returned no card and no error")
		}
		return err
	}
}

func doHeartbeat(r HeartbeatRequest) func(e *env) error {
	return func(e *env) error {
		r.Mutation = m
		_, err := e.b.Heartbeat(e.ctx, r)
		return err
	}
}

func doLease(op Op, id, owner string, epoch int64) func(e *env) error {
	return func(e *env) error {
		r := LeaseRequest{Mutation: m, ID: id, Owner: owner, Epoch: epoch, Reason: "because"}
		var err error
		switch op {
		case OpRelease:
			_, err = e.b.Release(e.ctx, r)
		case OpComplete:
			_, err = e.b.Complete(e.ctx, r)
		case OpBlock:
			_, err = e.b.Block(e.ctx, r)
		case OpFail:
			_, err = e.b.Fail(e.ctx, r)
		default:
			panic(op)
		}
		return err
	}
}

func doReclaim(id string) func(e *env) error {
	return func(e *env) error {
		cards, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m, ID: id, Reason: "stuck"})
		if err == nil && len(cards) != 1 {
			return errors.New("reclaim by id returned no card")
		}
		return err
	}
}

func doUnblock(id string) func(e *env) error {
	return func(e *env) error { _, err := e.b.Unblock(e.ctx, m, id); return err }
}

func doReopen(id string) func(e *env) error {
	return func(e *env) error { _, err := e.b.Reopen(e.ctx, m, id); return err }
}

func doLink(from, to string) func(e *env) error {
	return func(e *env) error { _, err := e.b.Link(e.ctx, m, from, to); return err }
}

func doUnlink(from, to string) func(e *env) error {
	return func(e *env) error { _, err := e.b.Unlink(e.ctx, m, from, to); return err }
}

func deferA(d time.Duration) func(e *env) {
	return func(e *env) {
		until := e.clk.Now().Add(d)
		if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{DeferUntil: &until}}); err != nil {
			e.t.Fatal(err)
		}
	}
}

func wantStatus(s Status) func(t *testing.T, c Card) {
	return func(t *testing.T, c Card) {
		t.Helper()
		if c.Status != s {
			t.Fatalf("status = %s, want %s", c.Status, s)
		}
		if (c.ClaimOwner != "") != (s == StatusClaimed) || (c.LeaseExpiresAt != nil) != (s == StatusClaimed) {
			t.Fatalf("status %s with owner %q, lease %v", c.Status, c.ClaimOwner, c.LeaseExpiresAt)
		}
	}
}

func wantLease(owner string, epoch int64, attempts int) func(t *testing.T, c Card) {
	return func(t *testing.T, c Card) {
		t.Helper()
		wantStatus(StatusClaimed)(t, c)
		if c.ClaimOwner != owner || c.ClaimEpoch != epoch || c.Attempts != attempts {
			t.Fatalf("lease = %s epoch %d attempts %d, want %s epoch %d attempts %d",
				c.ClaimOwner, c.ClaimEpoch, c.Attempts, owner, epoch, attempts)
		}
	}
}

func transitions() []transition {
	long := strings.Repeat("x", wire.MaxIDLen+1)
	many := make([]string, wire.MaxListEntries+1)
	for i := range many {
		many[i] = "l"
	}
	return append([]transition{
		// create
		{name: "create", state: stAbsent, op: OpCreate, do: doCreate(CreateRequest{ID: "A", Title: "a"}),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusReady)(t, c)
				if c.Version != 1 || c.Attempts != 0 || c.ClaimEpoch != 0 || !c.CreatedAt.Equal(c.UpdatedAt) {
					t.Fatalf("new card = %+v", c)
				}
			}},
		{name: "create with every field", state: stAbsent, op: OpCreate, do: doCreate(CreateRequest{
			ID: "A", Title: "a", Body: "b", Phase: "p", Priority: wire.MaxPriority, Labels: []string{"x", "y", "x"},
			DependsOn: []string{"B"}, Parent: "B", Acceptance: []string{"works"}, MaxAttempts: 3,
			DeferUntil: t0.Add(time.Hour), IdempotencyKey: "k"}),
			check: func(t *testing.T, c Card) {
				if c.Title != "a" || c.Body != "b" || c.Phase != "p" || c.Priority != wire.MaxPriority ||
					strings.Join(c.Labels, ",") != "x,y" || strings.Join(c.DependsOn, ",") != "B" || c.Parent != "B" ||
					strings.Join(c.Acceptance, ",") != "works" || c.MaxAttempts != 3 || c.IdempotencyKey != "k" ||
					c.DeferUntil == nil || !c.DeferUntil.Equal(t0.Add(time.Hour)) {
					t.Fatalf("card = %+v", c)
				}
			}},
		{name: "create duplicate id", state: stReady, do: doCreate(CreateRequest{ID: "A", Title: "again"}), want: ErrConflict},
		{name: "create without title", state: stAbsent, do: doCreate(CreateRequest{ID: "A"}), want: ErrInvalid},
		{name: "create blank title", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: " \t"}), want: ErrInvalid},
		{name: "create title too long", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: strings.Repeat("t", wire.MaxTitleLen+1)}), want: ErrInvalid},
		{name: "create body too long", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", Body: strings.Repeat("b", MaxBodyLen+1)}), want: ErrInvalid},
		{name: "create id with space", state: stAbsent, do: doCreate(CreateRequest{ID: "a b", Title: "a"}), want: ErrInvalid},
		{name: "create id leading dash", state: stAbsent, do: doCreate(CreateRequest{ID: "-a", Title: "a"}), want: ErrInvalid},
		{name: "create id too long", state: stAbsent, do: doCreate(CreateRequest{ID: long, Title: "a"}), want: ErrInvalid},
		{name: "create priority too high", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", Priority: wire.MaxPriority + 1}), want: ErrInvalid},
		{name: "create priority too low", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", Priority: -wire.MaxPriority - 1}), want: ErrInvalid},
		{name: "create missing dependency", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", DependsOn: []string{"Z"}}), want: ErrNotFound},
		{name: "create depends on itself", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", DependsOn: []string{"A"}}), want: ErrInvalid},
		{name: "create missing parent", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", Parent: "Z"}), want: ErrNotFound},
		{name: "create own parent", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", Parent: "A"}), want: ErrInvalid},
		{name: "create negative max attempts", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", MaxAttempts: -1}), want: ErrInvalid},
		{name: "create empty label", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", Labels: []string{"ok", " "}}), want: ErrInvalid},
		{name: "create too many labels", state: stAbsent, do: doCreate(CreateRequest{ID: "A", Title: "a", Labels: many}), want: ErrInvalid},
		{name: "create without actor", state: stAbsent, do: func(e *env) error {
			_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: Mutation{RequestID: "r"}, ID: "A", Title: "a"})
			return err
		}, want: ErrInvalid},

		// update
		{name: "update ready", state: stReady, op: OpUpdate, do: doUpdate("A", Fields{Title: strp("new"), Priority: intp(7)}),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusReady)(t, c)
				if c.Title != "new" || c.Priority != 7 || c.Version != 2 {
					t.Fatalf("card = %+v", c)
				}
			}},
		{name: "update claimed keeps lease", state: stClaimed, op: OpUpdate, do: doUpdate("A", Fields{Body: strp("more")}), check: wantLease("w1", 1, 1)},
		{name: "update expired", state: stExpired, op: OpUpdate, do: doUpdate("A", Fields{Phase: strp("p2")}), check: wantLease("w1", 1, 1)},
		{name: "update blocked", state: stBlocked, op: OpUpdate, do: doUpdate("A", Fields{Labels: strs("l")}), check: wantStatus(StatusBlocked)},
		{name: "update done", state: stDone, op: OpUpdate, do: doUpdate("A", Fields{Acceptance: strs("a")}), check: wantStatus(StatusDone)},
		{name: "update clears defer", state: stReady, prep: deferA(time.Hour), op: OpUpdate, do: doUpdate("A", Fields{DeferUntil: &time.Time{}}),
			check: func(t *testing.T, c Card) {
				if c.DeferUntil != nil {
					t.Fatalf("defer_until = %v", c.DeferUntil)
				}
			}},
		{name: "update missing card", state: stAbsent, do: doUpdate("A", Fields{Title: strp("x")}), want: ErrNotFound},
		{name: "update bad id", state: stReady, do: doUpdate("a/b", Fields{Title: strp("x")}), want: ErrInvalid},
		{name: "update nothing", state: stReady, do: doUpdate("A", Fields{}), want: ErrInvalid},
		{name: "update blank title", state: stReady, do: doUpdate("A", Fields{Title: strp("")}), want: ErrInvalid},
		{name: "update idempotency key", state: stReady, do: doUpdate("A", Fields{IdempotencyKey: "k"}), want: ErrInvalid},
		{name: "update priority out of range", state: stReady, do: doUpdate("A", Fields{Priority: intp(wire.MaxPriority + 1)}), want: ErrInvalid},
		{name: "update depends on itself", state: stReady, do: doUpdate("A", Fields{DependsOn: strs("A")}), want: ErrInvalid},
		{name: "update missing dependency", state: stReady, do: doUpdate("A", Fields{DependsOn: strs("B", "Z")}), want: ErrNotFound},
		{name: "update own parent", state: stReady, do: doUpdate("A", Fields{Parent: strp("A")}), want: ErrInvalid},
		{name: "update missing parent", state: stReady, do: doUpdate("A", Fields{Parent: strp("Z")}), want: ErrNotFound},
		{name: "update negative max attempts", state: stReady, do: doUpdate("A", Fields{MaxAttempts: intp(-2)}), want: ErrInvalid},

		// claim
		{name: "claim ready", state: stReady, op: OpClaim, do: doClaim("A", "w2", time.Minute), check: wantLease("w2", 1, 1)},
		{name: "claim own live lease", state: stClaimed, op: OpClaim, do: doClaim("A", "w1", time.Minute), check: wantLease("w1", 2, 1)},
		{name: "claim expired lease", state: stExpired, op: OpClaim, do: doClaim("A", "w2", time.Minute), check: wantLease("w2", 2, 2)},
		{name: "claim with satisfied dependency", state: stLinked, op: OpClaim,
			prep: func(e *env) {
				if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "B"}); err != nil {
					e.t.Fatal(err)
				}
			}, do: doClaim("A", "w2", time.Minute), check: wantLease("w2", 1, 1)},
		{name: "claim held by another", state: stClaimed, do: doClaim("A", "w2", time.Minute), want: ErrConflict},
		{name: "claim blocked", state: stBlocked, do: doClaim("A", "w2", time.Minute), want: ErrConflict},
		{name: "claim done", state: stDone, do: doClaim("A", "w2", time.Minute), want: ErrConflict},
		{name: "claim with open dependency", state: stLinked, do: doClaim("A", "w2", time.Minute), want: ErrConflict},
		{name: "claim deferred", state: stReady, prep: deferA(time.Hour), do: doClaim("A", "w2", time.Minute), want: ErrConflict},
		{name: "claim after defer passed", state: stReady, prep: deferA(-time.Second), op: OpClaim, do: doClaim("A", "w2", time.Minute), check: wantLease("w2", 1, 1)},
		{name: "claim missing card", state: stAbsent, do: doClaim("A", "w2", time.Minute), want: ErrNotFound},
		{name: "claim without owner", state: stReady, do: doClaim("A", "", time.Minute), want: ErrInvalid},
		{name: "claim ttl under 1s", state: stReady, do: doClaim("A", "w2", 500*time.Millisecond), want: ErrInvalid},
		{name: "claim without actor", state: stReady, do: func(e *env) error {
			_, err := e.b.Claim(e.ctx, ClaimRequest{ID: "A", Owner: "w2"})
			return err
		}, want: ErrInvalid},

		// heartbeat
		{name: "heartbeat", state: stClaimed, op: OpHeartbeat, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1, TTL: 2 * time.Minute}),
			check: func(t *testing.T, c Card) {
				wantLease("w1", 1, 1)(t, c)
				if c.LastHeartbeatAt == nil || c.ClaimTTLSeconds != 120 || !c.LeaseExpiresAt.Equal(c.LastHeartbeatAt.Add(2*time.Minute)) {
					t.Fatalf("lease after heartbeat = %+v", c)
				}
			}},
		{name: "heartbeat without epoch", state: stClaimed, op: OpHeartbeat, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1"}), check: wantLease("w1", 1, 1)},
		{name: "heartbeat with progress", state: stClaimed, op: OpHeartbeat,
			do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1, Progress: intp(40), Checkpoint: json.RawMessage(`{ "step" : 3 }`)}),
			check: func(t *testing.T, c Card) {
				if c.Progress == nil || *c.Progress != 40 || string(c.Checkpoint) != `{"step":3}` {
					t.Fatalf("progress %v checkpoint %s", c.Progress, c.Checkpoint)
				}
			}},
		{name: "heartbeat after expiry, not retaken", state: stExpired, op: OpHeartbeat, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}),
			check: func(t *testing.T, c Card) {
				if !c.Leased(t0.Add(2*time.Minute + time.Second)) {
					t.Fatalf("heartbeat did not renew an expired lease: %+v", c)
				}
			}},
		{name: "heartbeat by another owner", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w2"}), want: ErrFenced},
		{name: "heartbeat wrong epoch", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 2}), want: ErrFenced},
		{name: "heartbeat ready", state: stReady, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}), want: ErrFenced},
		{name: "heartbeat blocked", state: stBlocked, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1"}), want: ErrFenced},
		{name: "heartbeat done", state: stDone, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1"}), want: ErrFenced},
		{name: "heartbeat missing card", state: stAbsent, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1"}), want: ErrNotFound},
		{name: "heartbeat without owner", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Epoch: 1}), want: ErrInvalid},
		{name: "heartbeat progress over 100", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Progress: intp(101)}), want: ErrInvalid},
		{name: "heartbeat negative progress", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Progress: intp(-1)}), want: ErrInvalid},
		{name: "heartbeat bad checkpoint", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Checkpoint: json.RawMessage(`{"a":`)}), want: ErrInvalid},
		{name: "heartbeat huge checkpoint", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1",
			Checkpoint: json.RawMessage(`"` + strings.Repeat("c", wire.MaxCheckpoint) + `"`)}), want: ErrInvalid},
		{name: "heartbeat ttl under 1s", state: stClaimed, do: doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", TTL: time.Millisecond}), want: ErrInvalid},

		// release
		{name: "release", state: stClaimed, op: OpRelease, do: doLease(OpRelease, "A", "w1", 1),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusReady)(t, c)
				if c.ClaimEpoch != 1 || c.Attempts != 1 || c.ClaimedAt != nil || c.LastHeartbeatAt != nil || c.ClaimTTLSeconds != 0 {
					t.Fatalf("released card = %+v", c)
				}
			}},
		{name: "release without epoch", state: stClaimed, op: OpRelease, do: doLease(OpRelease, "A", "w1", 0), check: wantStatus(StatusReady)},
		{name: "release expired own lease", state: stExpired, op: OpRelease, do: doLease(OpRelease, "A", "w1", 1), check: wantStatus(StatusReady)},
		{name: "release by another owner", state: stClaimed, do: doLease(OpRelease, "A", "w2", 1), want: ErrFenced},
		{name: "release wrong epoch", state: stClaimed, do: doLease(OpRelease, "A", "w1", 5), want: ErrFenced},
		{name: "release ready", state: stReady, do: doLease(OpRelease, "A", "w1", 1), want: ErrFenced},
		{name: "release blocked", state: stBlocked, do: doLease(OpRelease, "A", "w1", 1), want: ErrFenced},
		{name: "release done", state: stDone, do: doLease(OpRelease, "A", "w1", 1), want: ErrFenced},
		{name: "release without owner", state: stClaimed, do: doLease(OpRelease, "A", "", 1), want: ErrInvalid},
		{name: "release missing card", state: stAbsent, do: doLease(OpRelease, "A", "w1", 1), want: ErrNotFound},

		// reclaim of one card (forced)
		{name: "reclaim live lease", state: stClaimed, op: OpReclaim, do: doReclaim("A"),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusReady)(t, c)
				if c.ClaimEpoch != 1 {
					t.Fatalf("epoch = %d after reclaim", c.ClaimEpoch)
				}
			}},
		{name: "reclaim expired lease", state: stExpired, op: OpReclaim, do: doReclaim("A"), check: wantStatus(StatusReady)},
		{name: "reclaim ready", state: stReady, do: doReclaim("A"), want: ErrConflict},
		{name: "reclaim blocked", state: stBlocked, do: doReclaim("A"), want: ErrConflict},
		{name: "reclaim done", state: stDone, do: doReclaim("A"), want: ErrConflict},
		{name: "reclaim missing card", state: stAbsent, do: doReclaim("A"), want: ErrNotFound},

		// complete
		{name: "complete by owner", state: stClaimed, op: OpComplete, do: doLease(OpComplete, "A", "w1", 1),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusDone)(t, c)
				if c.ClosedAt == nil || c.CloseNote != "because" || c.ClaimEpoch != 1 {
					t.Fatalf("completed card = %+v", c)
				}
			}},
		{name: "complete claimed by admin", state: stClaimed, op: OpComplete, do: doLease(OpComplete, "A", "", 0), check: wantStatus(StatusDone)},
		{name: "complete ready by admin", state: stReady, op: OpComplete, do: doLease(OpComplete, "A", "", 0), check: wantStatus(StatusDone)},
		{name: "complete blocked by admin", state: stBlocked, op: OpComplete, do: doLease(OpComplete, "A", "", 0),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusDone)(t, c)
				if c.BlockedReason != "" {
					t.Fatalf("done card keeps blocked reason %q", c.BlockedReason)
				}
			}},
		{name: "complete expired own lease", state: stExpired, op: OpComplete, do: doLease(OpComplete, "A", "w1", 1), check: wantStatus(StatusDone)},
		{name: "complete by another owner", state: stClaimed, do: doLease(OpComplete, "A", "w2", 1), want: ErrFenced},
		{name: "complete wrong epoch", state: stClaimed, do: doLease(OpComplete, "A", "w1", 3), want: ErrFenced},
		{name: "complete ready as owner", state: stReady, do: doLease(OpComplete, "A", "w1", 1), want: ErrFenced},
		{name: "complete done", state: stDone, do: doLease(OpComplete, "A", "", 0), want: ErrConflict},
		{name: "complete done by an owner", state: stDone, do: doLease(OpComplete, "A", "w1", 1), want: ErrFenced},
		{name: "complete missing card", state: stAbsent, do: doLease(OpComplete, "A", "", 0), want: ErrNotFound},

		// block
		{name: "block ready", state: stReady, op: OpBlock, do: doLease(OpBlock, "A", "", 0),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusBlocked)(t, c)
				if c.BlockedReason != "because" {
					t.Fatalf("blocked reason = %q", c.BlockedReason)
				}
			}},
		{name: "block claimed by admin", state: stClaimed, op: OpBlock, do: doLease(OpBlock, "A", "", 0), check: wantStatus(StatusBlocked)},
		{name: "block claimed by owner", state: stClaimed, op: OpBlock, do: doLease(OpBlock, "A", "w1", 1), check: wantStatus(StatusBlocked)},
		{name: "block expired", state: stExpired, op: OpBlock, do: doLease(OpBlock, "A", "", 0), check: wantStatus(StatusBlocked)},
		{name: "block blocked again", state: stBlocked, op: OpBlock, do: doLease(OpBlock, "A", "", 0),
			check: func(t *testing.T, c Card) {
				if c.BlockedReason != "because" {
					t.Fatalf("blocked reason = %q", c.BlockedReason)
				}
			}},
		{name: "block by another owner", state: stClaimed, do: doLease(OpBlock, "A", "w2", 0), want: ErrFenced},
		{name: "block wrong epoch", state: stClaimed, do: doLease(OpBlock, "A", "w1", 2), want: ErrFenced},
		{name: "block done", state: stDone, do: doLease(OpBlock, "A", "", 0), want: ErrConflict},
		{name: "block missing card", state: stAbsent, do: doLease(OpBlock, "A", "", 0), want: ErrNotFound},

		// unblock
		{name: "unblock", state: stBlocked, op: wire.OpUnblock, do: doUnblock("A"),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusReady)(t, c)
				if c.BlockedReason != "" {
					t.Fatalf("blocked reason = %q", c.BlockedReason)
				}
			}},
		{name: "unblock ready", state: stReady, do: doUnblock("A"), want: ErrConflict},
		{name: "unblock claimed", state: stClaimed, do: doUnblock("A"), want: ErrConflict},
		{name: "unblock expired", state: stExpired, do: doUnblock("A"), want: ErrConflict},
		{name: "unblock done", state: stDone, do: doUnblock("A"), want: ErrConflict},
		{name: "unblock missing card", state: stAbsent, do: doUnblock("A"), want: ErrNotFound},

		// reopen
		{name: "reopen", state: stDone, op: wire.OpReopen, do: doReopen("A"),
			check: func(t *testing.T, c Card) {
				wantStatus(StatusReady)(t, c)
				if c.ClosedAt != nil || c.CloseNote != "" {
					t.Fatalf("reopened card = %+v", c)
				}
			}},
		{name: "reopen ready", state: stReady, do: doReopen("A"), want: ErrConflict},
		{name: "reopen claimed", state: stClaimed, do: doReopen("A"), want: ErrConflict},
		{name: "reopen blocked", state: stBlocked, do: doReopen("A"), want: ErrConflict},
		{name: "reopen missing card", state: stAbsent, do: doReopen("A"), want: ErrNotFound},

		// link
		{name: "link", state: stReady, op: OpLink, do: doLink("A", "B"),
			check: func(t *testing.T, c Card) {
				if strings.Join(c.DependsOn, ",") != "B" {
					t.Fatalf("depends_on = %v", c.DependsOn)
				}
			}},
		{name: "link claimed", state: stClaimed, op: OpLink, do: doLink("A", "B"), check: wantLease("w1", 1, 1)},
		{name: "link done", state: stDone, op: OpLink, do: doLink("A", "B"), check: wantStatus(StatusDone)},
		{name: "link to itself", state: stReady, do: doLink("A", "A"), want: ErrInvalid},
		{name: "link to missing card", state: stReady, do: doLink("A", "Z"), want: ErrNotFound},
		{name: "link from missing card", state: stAbsent, do: doLink("A", "B"), want: ErrNotFound},
		{name: "link bad id", state: stReady, do: doLink("A B", "B"), want: ErrInvalid},
		{name: "link twice", state: stLinked, do: doLink("A", "B"), want: ErrConflict},
		{name: "link closing a cycle", state: stLinked, do: doLink("B", "A"), want: ErrConflict},

		// unlink
		{name: "unlink", state: stLinked, op: OpUnlink, do: doUnlink("A", "B"),
			check: func(t *testing.T, c Card) {
				if len(c.DependsOn) != 0 {
					t.Fatalf("depends_on = %v", c.DependsOn)
				}
			}},
		{name: "unlink not linked", state: stReady, do: doUnlink("A", "B"), want: ErrConflict},
		{name: "unlink reversed", state: stLinked, do: doUnlink("B", "A"), want: ErrConflict},
		{name: "unlink missing card", state: stAbsent, do: doUnlink("A", "B"), want: ErrNotFound},

		{name: "fail", state: stClaimed, op: OpFail, do: doLease(OpFail, "A", "w1", 1), check: wantStatus(StatusReady)},
		{name: "fail expired own lease", state: stExpired, op: OpFail, do: doLease(OpFail, "A", "w1", 1), check: wantStatus(StatusReady)},
		{name: "fail by another owner", state: stClaimed, do: doLease(OpFail, "A", "w2", 1), want: ErrFenced},
		{name: "fail wrong epoch", state: stClaimed, do: doLease(OpFail, "A", "w1", 5), want: ErrFenced},
		{name: "fail ready", state: stReady, do: doLease(OpFail, "A", "w1", 1), want: ErrFenced},
		{name: "fail done", state: stDone, do: doLease(OpFail, "A", "w1", 1), want: ErrFenced},
		{name: "fail without owner", state: stClaimed, do: doLease(OpFail, "A", "", 1), want: ErrInvalid},
		{name: "fail missing card", state: stAbsent, do: doLease(OpFail, "A", "w1", 1), want: ErrNotFound},

		{name: "note ready", state: stReady, op: OpNote, do: doNote("A", "", 0), check: wantStatus(StatusReady)},
		{name: "note done", state: stDone, op: OpNote, do: doNote("A", "", 0), check: wantStatus(StatusDone)},
		{name: "note blocked", state: stBlocked, op: OpNote, do: doNote("A", "", 0), check: wantStatus(StatusBlocked)},
		{name: "note by the owner", state: stClaimed, op: OpNote, do: doNote("A", "w1", 1), check: wantStatus(StatusClaimed)},
		{name: "note by another owner", state: stClaimed, do: doNote("A", "w2", 0), want: ErrFenced},
		{name: "note stale epoch", state: stClaimed, do: doNote("A", "w1", 5), want: ErrFenced},
		{name: "note missing card", state: stAbsent, do: doNote("A", "", 0), want: ErrNotFound},
	}, append(v3Transitions(), reviewTransitions()...)...)
}

func doNote(id, owner string, epoch int64) func(e *env) error {
	return func(e *env) error {
		_, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: id, Owner: owner, Epoch: epoch, Text: "a note"})
		return err
	}
}

// TestTransitions tries every op from every state it has a rule for. A legal
// transition appends exactly one event of its op and a fresh handle folds
// the same card; an illegal one fails with its sentinel and leaves the
// ledger bytes as they were.
func TestTransitions(t *testing.T) {
	covered := map[Op]bool{}
	for _, tc := range transitions() {
		if tc.want == nil {
			covered[tc.op] = true
		}
	}
	for _, op := range Ops {
		if !covered[op] {
			t.Errorf("no legal transition listed for %s", op)
		}
	}
	for _, tc := range transitions() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupState(t, tc.state)
			if tc.prep != nil {
				tc.prep(e)
			}
			if tc.want != nil {
				before, _ := e.b.Get("A")
				e.unchanged(tc.want, tc.do)
				after, _ := e.b.Get("A")
				if a, b := mustJSON(t, before), mustJSON(t, after); a != b {
					t.Fatalf("refused request changed the card:\n%s\n%s", a, b)
				}
				return
			}
			e.appendsOne(tc.op, tc.do)
			c := e.card("A")
			if tc.check != nil {
				tc.check(t, c)
			}
			fresh, err := Open(e.dir, Options{Clock: e.clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			fc, err := fresh.Get("A")
			if err != nil {
				t.Fatal(err)
			}
			if a, b := mustJSON(t, c), mustJSON(t, fc); a != b {
				t.Fatalf("writer and a fresh fold disagree:\n%s\n%s", a, b)
			}
			if n := len(fresh.held().Conflicts()); n != 0 {
				t.Fatalf("a fresh fold records %d conflicts", n)
			}
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRuleErrorsAreConflicts checks that validation failures are told apart
// from IO and damage.
func TestRuleErrorsAreConflicts(t *testing.T) {
	e := setupState(t, stReady)
	err := doLink("A", "A")(e)
	if !isRule(err) {
		t.Fatalf("isRule(%v) = false", err)
	}
	if isRule(errors.New("disk on fire")) || isRule(&wire.CorruptError{Err: wire.ErrChecksum}) {
		t.Fatal("isRule is true for a non-rule error")
	}
}

// TestStateApplyRefusedEventChangesNothing drives State directly: a refused
// event is counted and recorded as a conflict and leaves every card alone.
func TestStateApplyRefusedEventChangesNothing(t *testing.T) {
	s := fold.NewState()
	at := t0
	ev := func(op Op, card string, mod func(*Event)) *Event {
		at = at.Add(time.Second)
		e := &Event{V: 1, ID: at.Format("150405"), At: at, Actor: "a", Op: op, Card: card}
		if mod != nil {
			mod(e)
		}
		return e
	}
	if err := s.Apply(ev(OpCreate, "A", func(e *Event) { e.Fields = &Fields{Title: strp("a")} })); err != nil {
		t.Fatal(err)
	}
	before := stateJSON(t, s)
	refused := []*Event{
		ev(OpClaim, "A", func(e *Event) { e.Owner, e.TTLSeconds, e.Epoch, e.ExpectVersion = "w", 60, 1, 7 }),
		ev(OpClaim, "A", func(e *Event) { e.Owner, e.TTLSeconds, e.Epoch, e.ExpectVersion = "w", 60, 2, 1 }),
		ev(OpHeartbeat, "A", func(e *Event) { e.Owner = "w" }),
		ev(OpCreate, "A", func(e *Event) { e.Fields = &Fields{Title: strp("again")} }),
		ev(OpCreate, "B", nil),
		ev(OpUpdate, "Z", func(e *Event) { e.Fields = &Fields{Title: strp("z")} }),
		ev(Op("explode"), "A", nil),
	}
	for i, r := range refused {
		if err := s.Check(r); err == nil {
			t.Fatalf("event %d: Check passed", i)
		}
		if err := s.Apply(r); err == nil {
			t.Fatalf("event %d: Apply passed", i)
		}
		if got := stateJSON(t, s); got != before {
			t.Fatalf("event %d changed the state:\n%s\n%s", i, before, got)
		}
	}
	if s.Events() != int64(1+len(refused)) || len(s.Conflicts()) != len(refused) {
		t.Fatalf("events %d conflicts %d", s.Events(), len(s.Conflicts()))
	}
	c := s.Conflicts()[0]
	if c.Op != OpClaim || c.Card != "A" || c.Actor != "a" || !strings.Contains(c.Reason, "version") {
		t.Fatalf("conflict = %+v", c)
	}
	if s.Last().ID != refused[len(refused)-1].ID {
		t.Fatalf("Last = %s", s.Last().ID)
	}
}
