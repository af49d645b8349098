package ledger

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

func TestCreateIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	first, created, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, Title: "deploy", IdempotencyKey: "ticket-42"})
	if err != nil || !created {
		t.Fatalf("first create: %v created=%v", err, created)
	}
	size := len(e.bytes())
	other := e.open() // another process, same directory
	for i, b := range []*Backlog{e.b, other, e.b} {
		again, created, err := b.Create(e.ctx, CreateRequest{Mutation: Mutation{Actor: "someone-else"}, Title: "different title", Priority: 9, IdempotencyKey: "ticket-42"})
		if err != nil || created {
			t.Fatalf("repeat %d: %v created=%v", i, err, created)
		}
		if mustJSON(t, again) != mustJSON(t, first) {
			t.Fatalf("repeat %d returned\n%s\nwant\n%s", i, mustJSON(t, again), mustJSON(t, first))
		}
		if len(e.bytes()) != size {
			t.Fatalf("repeat %d appended", i)
		}
	}
	// A repeat naming an explicit id still returns the original.
	if again, created, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "X", Title: "t", IdempotencyKey: "ticket-42"}); err != nil || created || again.ID != first.ID {
		t.Fatalf("repeat with id: %+v created=%v %v", again, created, err)
	}
	// Another key makes another card.
	if c, created, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, Title: "t", IdempotencyKey: "ticket-43"}); err != nil || !created || c.ID == first.ID {
		t.Fatalf("new key: %+v created=%v %v", c, created, err)
	}
	if c, ok := e.b.held().CardByKey("ticket-42"); !ok || c.ID != first.ID {
		t.Fatalf("CardByKey = %+v %v", c, ok)
	}
	if _, ok := e.b.held().CardByKey("nope"); ok {
		t.Fatal("CardByKey found an unknown key")
	}
}

// TestCreateKeyCollisionInFold: two clones that each created a card with one
// key fold to a single owner of the key; the later create is a conflict.
func TestCreateKeyCollisionInFold(t *testing.T) {
	mk := func(at time.Time, id, card string) *Event {
		return &Event{V: 1, ID: id, At: at, Actor: "a", Op: OpCreate, Card: card, Fields: &Fields{Title: strp("t"), IdempotencyKey: "k"}}
	}
	s := fold.Fold([]*Event{mk(t0, "1", "A"), mk(t0.Add(1), "2", "B")})
	if s.Len() != 1 || len(s.Conflicts()) != 1 {
		t.Fatalf("cards %d conflicts %d", s.Len(), len(s.Conflicts()))
	}
	if c, _ := s.CardByKey("k"); c.ID != "A" {
		t.Fatalf("key belongs to %s", c.ID)
	}
}

func TestGeneratedCardIDs(t *testing.T) {
	e := newEnv(t)
	pattern := regexp.MustCompile(`^bl-[0-9a-hjkmnp-tv-z]{8}$`)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		c, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, Title: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if !pattern.MatchString(c.ID) || ValidID(c.ID) != nil || seen[c.ID] {
			t.Fatalf("generated id %q", c.ID)
		}
		seen[c.ID] = true
	}
}

// replayable is one mutation that can carry a request id, with the setup
// that makes it legal.
type replayable struct {
	op    Op
	state string
	do    func(e *env, mu Mutation) (Card, error)
}

func replayables() []replayable {
	lease := func(f func(*Backlog, context.Context, LeaseRequest) (Card, error)) func(e *env, mu Mutation) (Card, error) {
		return func(e *env, mu Mutation) (Card, error) {
			return f(e.b, e.ctx, LeaseRequest{Mutation: mu, ID: "A", Owner: "w1", Epoch: 1, Reason: "r"})
		}
	}
	return append([]replayable{
		{op: OpCreate, state: stAbsent, do: func(e *env, mu Mutation) (Card, error) {
			c, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: mu, Title: "generated id"})
			return c, err
		}},
		{op: OpUpdate, state: stReady, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Update(e.ctx, UpdateRequest{Mutation: mu, ID: "A", Fields: Fields{Priority: intp(3)}})
		}},
		{op: OpClaim, state: stReady, do: func(e *env, mu Mutation) (Card, error) {
			c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: mu, Owner: "w2", TTL: time.Minute})
			if c == nil {
				return Card{}, err
			}
			return *c, err
		}},
		{op: OpHeartbeat, state: stClaimed, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: mu, ID: "A", Owner: "w1", Epoch: 1, Progress: intp(10)})
		}},
		{op: OpRelease, state: stClaimed, do: lease((*Backlog).Release)},
		{op: OpReclaim, state: stClaimed, do: func(e *env, mu Mutation) (Card, error) {
			cards, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: mu, ID: "A"})
			if len(cards) != 1 {
				return Card{}, err
			}
			return cards[0], err
		}},
		{op: OpComplete, state: stClaimed, do: lease((*Backlog).Complete)},
		{op: OpBlock, state: stReady, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Block(e.ctx, LeaseRequest{Mutation: mu, ID: "A", Reason: "r"})
		}},
		{op: wire.OpUnblock, state: stBlocked, do: func(e *env, mu Mutation) (Card, error) { return e.b.Unblock(e.ctx, mu, "A") }},
		{op: wire.OpReopen, state: stDone, do: func(e *env, mu Mutation) (Card, error) { return e.b.Reopen(e.ctx, mu, "A") }},
		{op: OpLink, state: stReady, do: func(e *env, mu Mutation) (Card, error) { return e.b.Link(e.ctx, mu, "A", "B") }},
		{op: OpUnlink, state: stLinked, do: func(e *env, mu Mutation) (Card, error) { return e.b.Unlink(e.ctx, mu, "A", "B") }},
		{op: OpFail, state: stClaimed, do: lease((*Backlog).Fail)},
		{op: OpNote, state: stReady, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Note(e.ctx, NoteRequest{Mutation: mu, ID: "A", Text: "n"})
		}},
		{op: wire.OpHandoff, state: stClaimed, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Handoff(e.ctx, HandoffRequest{Mutation: mu, ID: "A", Owner: "w1", Epoch: 1, To: "w2"})
		}},
		{op: wire.OpDelete, state: stReady, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Delete(e.ctx, DeleteRequest{Mutation: mu, ID: "A", Reason: "dup"})
		}},
		{op: wire.OpRestore, state: stDeleted, do: func(e *env, mu Mutation) (Card, error) { return e.b.Restore(e.ctx, mu, "A") }},
	}, reviewReplayables()...)
}

// TestRequestIDReplay applies every mutation once with a request id, then
// replays it on the same handle and on a fresh one: the replay returns the
// card the request touched and appends nothing, even where running the
// request again would now be refused (release of a released card, reopen of
// a reopened one). Reusing the id for another op is a conflict.
func TestRequestIDReplay(t *testing.T) {
	seen := map[Op]bool{}
	for _, r := range replayables() {
		seen[r.op] = true
		t.Run(string(r.op), func(t *testing.T) {
			e := setupState(t, r.state)
			first := e.appendsOne(r.op, func(e *env) error {
				_, err := r.do(e, rid("req-1"))
				return err
			})
			if first.RequestID != "req-1" {
				t.Fatalf("event carries request id %q", first.RequestID)
			}
			want, err := e.b.Get(first.Card)
			if err != nil {
				t.Fatal(err)
			}
			size := len(e.bytes())
			for i, h := range []*Backlog{e.b, e.open()} {
				e2 := *e
				e2.b = h
				got, err := r.do(&e2, rid("req-1"))
				if err != nil {
					t.Fatalf("replay %d: %v", i, err)
				}
				if mustJSON(t, got) != mustJSON(t, want) {
					t.Fatalf("replay %d returned\n%s\nwant\n%s", i, mustJSON(t, got), mustJSON(t, want))
				}
				if len(e.bytes()) != size {
					t.Fatalf("replay %d appended", i)
				}
				if rc, ok := h.held().Receipt("req-1"); !ok || rc.Op != r.op || rc.Card != first.Card || rc.Event != first.ID {
					t.Fatalf("receipt = %+v %v", rc, ok)
				}
			}
			// The same request id for a different op is refused.
			e.unchanged(ErrConflict, func(e *env) error {
				if r.op == OpUpdate {
					_, err := e.b.Link(e.ctx, rid("req-1"), "A", "B")
					return err
				}
				_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: rid("req-1"), ID: "B", Fields: Fields{Title: strp("x")}})
				return err
			})
		})
	}
	for _, op := range Ops {
		if !seen[op] {
			t.Errorf("no replay test for %s", op)
		}
	}
}

// TestRequestIDReusedForAnotherCard: the same op on a different card under a
// used request id is a conflict, not a silent answer about the first card.
func TestRequestIDReusedForAnotherCard(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.create("B")
	if _, err := e.b.Block(e.ctx, LeaseRequest{Mutation: rid("r1"), ID: "A", Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	e.unchanged(ErrConflict, func(e *env) error {
		_, err := e.b.Block(e.ctx, LeaseRequest{Mutation: rid("r1"), ID: "B", Reason: "x"})
		return err
	})
	if c := e.card("B"); c.Status != StatusReady {
		t.Fatalf("B = %s", c.Status)
	}
}

// TestRequestIDFailedRequestCanRetry: a request refused by validation leaves
// no receipt, so the same id works once the request is valid.
func TestRequestIDFailedRequestCanRetry(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: rid("hb"), ID: "A", Owner: "w1"})
		return err
	})
	e.claim("A", "w1", time.Minute)
	e.appendsOne(OpHeartbeat, func(e *env) error {
		_, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: rid("hb"), ID: "A", Owner: "w1"})
		return err
	})
}

// TestClaimReplayAfterTheLeaseEnded: replaying a claim whose lease has
// since passed to someone else is fenced, never an answer naming the new
// owner's epoch.
func TestClaimReplayAfterTheLeaseEnded(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: rid("r2"), Owner: "w1", TTL: time.Second})
	if err != nil || c == nil || c.ClaimEpoch != 1 {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	again, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: rid("r2"), Owner: "w1", TTL: time.Second})
	if err != nil || again == nil || again.ClaimEpoch != 1 {
		t.Fatalf("replay while held = %+v, %v", again, err)
	}
	if _, err := e.b.Release(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	e.claim("A", "w2", time.Second)
	e.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: rid("r2"), Owner: "w1", TTL: time.Second})
		return err
	})
}
