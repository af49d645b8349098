package ledger

import (
	"errors"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stReview: card A was claimed by w1 (epoch 1) and sent to review by w1.
const stReview = "review"

func doSubmit(owner string, epoch int64) func(e *env) error {
	return func(e *env) error {
		_, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: owner, Epoch: epoch, Reason: "see the branch",
			Commit: "4f2a9c1", Branch: "bl/A"})
		return err
	}
}

func doVerdict(op wire.Op, actor, owner string, epoch int64, reason string) func(e *env) error {
	return func(e *env) error {
		r := ReviewRequest{Mutation: Mutation{Actor: actor}, ID: "A", Owner: owner, Epoch: epoch, Reason: reason}
		var err error
		if op == wire.OpApprove {
			_, err = e.b.Approve(e.ctx, r)
		} else {
			_, err = e.b.Reject(e.ctx, r)
		}
		return err
	}
}

func doClaimReview(owner string) func(e *env) error {
	return func(e *env) error {
		c, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, Owner: owner, TTL: time.Minute})
		if err == nil && c == nil {
			return errors.New("nothing to review")
		}
		return err
	}
}

// reviewedBy has owner take the review lease on A (epoch 2).
func reviewedBy(owner string) func(e *env) {
	return func(e *env) {
		e.t.Helper()
		if err := doClaimReview(owner)(e); err != nil {
			e.t.Fatal(err)
		}
	}
}

func reviewTransitions() []transition {
	inReview := func(t *testing.T, c wire.Card) {
		t.Helper()
		if c.Status != wire.StatusReview || c.ClaimOwner != "" || c.Commit != "4f2a9c1" || c.Branch != "bl/A" || c.SubmittedBy != "w1" || c.CloseNote != "see the branch" {
			t.Fatalf("after submit: %+v", c)
		}
	}
	return []transition{
		{name: "submit", state: stClaimed, op: wire.OpReview, do: doSubmit("w1", 1), check: inReview},
		{name: "submit by hand", state: stReady, op: wire.OpReview, do: doSubmit("", 0), check: wantStatus(wire.StatusReview)},
		{name: "submit by another owner", state: stClaimed, do: doSubmit("w2", 1), want: wire.ErrFenced},
		{name: "submit stale epoch", state: stClaimed, do: doSubmit("w1", 7), want: wire.ErrFenced},
		{name: "submit done", state: stDone, do: doSubmit("", 0), want: wire.ErrConflict},
		{name: "submit twice", state: stReview, do: doSubmit("", 0), want: wire.ErrConflict},
		{name: "complete in review", state: stReview, do: doLease(wire.OpComplete, "A", "", 0), want: wire.ErrConflict},
		{name: "claim in review", state: stReview, do: func(e *env) error {
			_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w2", TTL: time.Minute})
			return err
		}, want: wire.ErrConflict},

		{name: "claim review", state: stReview, op: wire.OpClaimReview, do: doClaimReview("rev"), check: func(t *testing.T, c wire.Card) {
			if c.Status != wire.StatusReview || c.ClaimOwner != "rev" || c.ClaimEpoch != 2 || c.Attempts != 1 {
				t.Fatalf("review lease: %+v", c)
			}
		}},
		{name: "claim review of ready card", state: stReady, do: func(e *env) error {
			_, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "rev", TTL: time.Minute})
			return err
		}, want: wire.ErrConflict},
		{name: "claim review by its author", state: stReview, do: func(e *env) error {
			_, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w1", TTL: time.Minute})
			return err
		}, want: wire.ErrConflict},
		{name: "claim review held by another", state: stReview, prep: reviewedBy("rev"),
			do: func(e *env) error {
				_, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "rev2", TTL: time.Minute})
				return err
			}, want: wire.ErrConflict},
		{name: "heartbeat review lease", state: stReview, prep: reviewedBy("rev"), op: wire.OpHeartbeat,
			do: func(e *env) error {
				_, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "rev", Epoch: 2})
				return err
			}, check: func(t *testing.T, c wire.Card) {
				if c.Status != wire.StatusReview || c.LastHeartbeatAt == nil {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "release review lease", state: stReview, prep: reviewedBy("rev"), op: wire.OpRelease,
			do: doLease(wire.OpRelease, "A", "rev", 2), check: func(t *testing.T, c wire.Card) {
				if c.Status != wire.StatusReview || c.ClaimOwner != "" {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "complete by the reviewer", state: stReview, prep: reviewedBy("rev"),
			do: doLease(wire.OpComplete, "A", "rev", 2), want: wire.ErrConflict},
		{name: "fail by the reviewer", state: stReview, prep: reviewedBy("rev"),
			do: doLease(wire.OpFail, "A", "rev", 2), want: wire.ErrFenced},

		{name: "approve", state: stReview, op: wire.OpApprove, do: doVerdict(wire.OpApprove, "alice", "", 0, "lgtm"), check: func(t *testing.T, c wire.Card) {
			wantStatus(wire.StatusDone)(t, c)
			if c.ClosedBy != "alice" || c.CloseNote != "lgtm" || c.ClosedAt == nil || c.Commit != "4f2a9c1" {
				t.Fatalf("approved: %+v", c)
			}
		}},
		{name: "approve by the reviewer", state: stReview, prep: reviewedBy("rev"), op: wire.OpApprove,
			do: doVerdict(wire.OpApprove, "x", "rev", 2, ""), check: func(t *testing.T, c wire.Card) {
				if c.Status != wire.StatusDone || c.ClosedBy != "rev" || c.CloseNote != "see the branch" {
					t.Fatalf("approved: %+v", c)
				}
			}},
		{name: "approve by hand while a reviewer holds it", state: stReview, prep: reviewedBy("rev"),
			do: doVerdict(wire.OpApprove, "alice", "", 0, ""), want: wire.ErrConflict},
		{name: "approve by another reviewer", state: stReview, prep: reviewedBy("rev"),
			do: doVerdict(wire.OpApprove, "alice", "rev2", 2, ""), want: wire.ErrFenced},
		{name: "self-approval", state: stReview, do: doVerdict(wire.OpApprove, "w1", "", 0, ""), want: fold.ErrSelfReview},
		{name: "approve a card that moved on", state: stReview, do: doVerdict(wire.OpApprove, "alice", "", 5, ""), want: wire.ErrFenced},
		{name: "approve ready", state: stReady, do: doVerdict(wire.OpApprove, "alice", "", 0, ""), want: wire.ErrFenced},
		{name: "approve missing card", state: stAbsent, do: doVerdict(wire.OpApprove, "alice", "", 0, ""), want: wire.ErrNotFound},

		{name: "reject", state: stReview, op: wire.OpReject, do: doVerdict(wire.OpReject, "alice", "", 0, "tests fail on arm64"), check: func(t *testing.T, c wire.Card) {
			wantStatus(wire.StatusReady)(t, c)
			if c.RejectReason != "tests fail on arm64" || c.Attempts != 1 || c.Branch != "bl/A" {
				t.Fatalf("rejected: %+v", c)
			}
		}},
		{name: "reject by its author", state: stReview, op: wire.OpReject, do: doVerdict(wire.OpReject, "w1", "", 0, "not yet"), check: wantStatus(wire.StatusReady)},
		{name: "reject without reason", state: stReview, do: doVerdict(wire.OpReject, "alice", "", 0, ""), want: wire.ErrInvalid},
		{name: "reject done", state: stDone, do: doVerdict(wire.OpReject, "alice", "", 0, "x"), want: wire.ErrFenced},
	}
}

func reviewReplayables() []replayable {
	return []replayable{
		{op: wire.OpReview, state: stClaimed, do: func(e *env, mu Mutation) (wire.Card, error) {
			return e.b.Submit(e.ctx, LeaseRequest{Mutation: mu, ID: "A", Owner: "w1", Epoch: 1})
		}},
		{op: wire.OpClaimReview, state: stReview, do: func(e *env, mu Mutation) (wire.Card, error) {
			c, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: mu, Owner: "rev", TTL: time.Minute})
			if c == nil {
				return wire.Card{}, err
			}
			return *c, err
		}},
		{op: wire.OpApprove, state: stReview, do: func(e *env, mu Mutation) (wire.Card, error) {
			return e.b.Approve(e.ctx, ReviewRequest{Mutation: mu, ID: "A"})
		}},
		{op: wire.OpReject, state: stReview, do: func(e *env, mu Mutation) (wire.Card, error) {
			return e.b.Reject(e.ctx, ReviewRequest{Mutation: mu, ID: "A", Reason: "no"})
		}},
	}
}

// TestReviewGate walks the whole path: a card in review does not satisfy
// its dependents; a rejected card comes back with its reason and its
// attempts, is claimed and sent to review again, and is done once approved.
func TestReviewGate(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.create("D")
	if _, err := e.b.Link(e.ctx, m, "D", "A"); err != nil {
		t.Fatal(err)
	}
	c := e.claim("A", "w1", time.Minute)
	if _, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: c.ClaimEpoch}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w2", TTL: time.Minute}); got != nil {
		t.Fatalf("claimed %s while A is in review", got.ID)
	}
	rc, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, Owner: "rev", TTL: time.Minute})
	if err != nil || rc == nil || rc.ID != "A" {
		t.Fatalf("review claim: %v %v", rc, err)
	}
	if again, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, Owner: "rev2", TTL: time.Minute}); err != nil || again != nil {
		t.Fatalf("a second reviewer got %v %v", again, err)
	}
	if _, err := e.b.Reject(e.ctx, ReviewRequest{Mutation: m, ID: "A", Owner: "rev", Epoch: rc.ClaimEpoch, Reason: "missing test"}); err != nil {
		t.Fatal(err)
	}
	got, _ := e.b.Get("A")
	if got.Status != wire.StatusReady || got.RejectReason != "missing test" || got.Attempts != 1 {
		t.Fatalf("after reject: %+v", got)
	}
	c = e.claim("A", "w2", time.Minute)
	if c.Attempts != 2 || c.RejectReason != "missing test" {
		t.Fatalf("reclaimed after reject: %+v", c)
	}
	if _, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w2", Epoch: c.ClaimEpoch}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.b.Get("A"); got.RejectReason != "" {
		t.Fatalf("reason kept after resubmit: %q", got.RejectReason)
	}
	if _, err := e.b.Approve(e.ctx, ReviewRequest{Mutation: Mutation{Actor: "carol"}, ID: "A"}); err != nil {
		t.Fatal(err)
	}
	if d, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w3", TTL: time.Minute}); err != nil || d == nil || d.ID != "D" {
		t.Fatalf("D after A approved: %v %v", d, err)
	}
	// The events are v3: a v2 reader refuses them.
	for _, ev := range e.events() {
		want := ev.LineVersion()
		switch ev.Op {
		case wire.OpReview, wire.OpClaimReview, wire.OpApprove, wire.OpReject:
			if want != 3 {
				t.Fatalf("%s written as v%d", ev.Op, want)
			}
		}
	}
}

// TestSelfApprovalAllowed: review.allow_self lets the author approve.
func TestSelfApprovalAllowed(t *testing.T) {
	e := setupState(t, stReview)
	if _, err := e.b.Approve(e.ctx, ReviewRequest{Mutation: m, ID: "A", Owner: "", Epoch: 0}); err != nil {
		t.Fatalf("approve by another actor: %v", err)
	}
	e = setupState(t, stReview)
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"review":{"allow_self":true}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
	if _, err := e.b.Approve(e.ctx, ReviewRequest{Mutation: Mutation{Actor: "w1"}, ID: "A"}); err != nil {
		t.Fatalf("self-approval with allow_self: %v", err)
	}
}

// TestNewerLinesRefused: the lines of the v3 ops and fields carry v3, and
// a reader refuses a line newer than it reads with its documented message
// (a v2 reader meeting these lines is this reader meeting a v4 line).
func TestNewerLinesRefused(t *testing.T) {
	for _, ev := range []*wire.Event{
		{Op: wire.OpReview, Card: "A"}, {Op: wire.OpApprove, Card: "A"}, {Op: wire.OpReject, Card: "A"}, {Op: wire.OpClaimReview, Card: "A"},
		{Op: wire.OpComplete, Card: "A", Commit: "abc"}, {Op: wire.OpComplete, Card: "A", Branch: "bl/A"},
		{Op: wire.OpUpdate, Card: "A", Fields: &wire.Fields{Paths: strs("src/**")}},
	} {
		if v := ev.LineVersion(); v != 3 {
			t.Errorf("%s %+v: v%d, want 3", ev.Op, ev, v)
		}
	}
	if v := (&wire.Event{Op: wire.OpComplete, Card: "A"}).LineVersion(); v != 1 {
		t.Errorf("a plain complete is v%d", v)
	}
	line, err := wire.EncodeLine(&wire.Event{V: wire.FormatVersion + 1, ID: "9f2c51d0a4b7e361", At: t0, Actor: "a", Op: wire.OpApprove, Card: "A"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wire.DecodeLine(line)
	if !errors.Is(err, wire.ErrVersion) || !strings.Contains(err.Error(), "upgrade bl") {
		t.Fatalf("a newer line: %v", err)
	}
}
