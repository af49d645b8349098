package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// stReview: card A was claimed by w1 (epoch 1) and sent to review by w1
// under the actor worker; the tests' other calls are by the actor tester.
const stReview = "review"

var worker = Mutation{Actor: "worker"}

func doSubmit(owner string, epoch int64) func(e *env) error {
	return func(e *env) error {
		_, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: owner, Epoch: epoch, Reason: "see the branch",
			Commit: "4f2a9c1", Branch: "bl/A"})
		return err
	}
}

func doVerdict(op Op, actor, owner string, epoch int64, reason string) func(e *env) error {
	return func(e *env) error {
		r := ReviewRequest{Mutation: Mutation{Actor: actor}, ID: "A", Owner: owner, Epoch: epoch, Reason: reason}
		var err error
		if op == OpApprove {
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
	inReview := func(t *testing.T, c Card) {
		t.Helper()
		if c.Status != StatusReview || c.ClaimOwner != "" || c.Commit != "4f2a9c1" || c.Branch != "bl/A" || c.SubmittedBy != "w1" || c.CloseNote != "see the branch" {
			t.Fatalf("after submit: %+v", c)
		}
	}
	return []transition{
		{name: "submit", state: stClaimed, op: OpReview, do: doSubmit("w1", 1), check: inReview},
		{name: "submit by hand", state: stReady, op: OpReview, do: doSubmit("", 0), check: wantStatus(StatusReview)},
		{name: "submit by another owner", state: stClaimed, do: doSubmit("w2", 1), want: ErrFenced},
		{name: "submit stale epoch", state: stClaimed, do: doSubmit("w1", 7), want: ErrFenced},
		{name: "submit done", state: stDone, do: doSubmit("", 0), want: ErrConflict},
		{name: "submit twice", state: stReview, do: doSubmit("", 0), want: ErrConflict},
		{name: "complete in review", state: stReview, do: doLease(OpComplete, "A", "", 0), want: ErrConflict},
		{name: "claim in review", state: stReview, do: func(e *env) error {
			_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w2", TTL: time.Minute})
			return err
		}, want: ErrConflict},

		{name: "claim review", state: stReview, op: OpClaimReview, do: doClaimReview("rev"), check: func(t *testing.T, c Card) {
			if c.Status != StatusReview || c.ClaimOwner != "rev" || c.ClaimEpoch != 2 || c.Attempts != 1 {
				t.Fatalf("review lease: %+v", c)
			}
		}},
		{name: "claim review of ready card", state: stReady, do: func(e *env) error {
			_, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "rev", TTL: time.Minute})
			return err
		}, want: ErrConflict},
		{name: "claim review by its author", state: stReview, do: func(e *env) error {
			_, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w1", TTL: time.Minute})
			return err
		}, want: ErrConflict},
		{name: "claim review by its author's actor", state: stReview, do: func(e *env) error {
			_, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: worker, ID: "A", Owner: "rev", TTL: time.Minute})
			return err
		}, want: ErrSelfReview},
		{name: "claim review held by another", state: stReview, prep: reviewedBy("rev"),
			do: func(e *env) error {
				_, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "rev2", TTL: time.Minute})
				return err
			}, want: ErrConflict},
		{name: "heartbeat review lease", state: stReview, prep: reviewedBy("rev"), op: OpHeartbeat,
			do: func(e *env) error {
				_, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "rev", Epoch: 2})
				return err
			}, check: func(t *testing.T, c Card) {
				if c.Status != StatusReview || c.LastHeartbeatAt == nil {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "release review lease", state: stReview, prep: reviewedBy("rev"), op: OpRelease,
			do: doLease(OpRelease, "A", "rev", 2), check: func(t *testing.T, c Card) {
				if c.Status != StatusReview || c.ClaimOwner != "" {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "complete by the reviewer", state: stReview, prep: reviewedBy("rev"),
			do: doLease(OpComplete, "A", "rev", 2), want: ErrConflict},
		{name: "fail by the reviewer", state: stReview, prep: reviewedBy("rev"),
			do: doLease(OpFail, "A", "rev", 2), want: ErrFenced},

		{name: "approve", state: stReview, op: OpApprove, do: doVerdict(OpApprove, "alice", "", 0, "lgtm"), check: func(t *testing.T, c Card) {
			wantStatus(StatusDone)(t, c)
			if c.ClosedBy != "alice" || c.CloseNote != "lgtm" || c.ClosedAt == nil || c.Commit != "4f2a9c1" {
				t.Fatalf("approved: %+v", c)
			}
		}},
		{name: "approve by the reviewer", state: stReview, prep: reviewedBy("rev"), op: OpApprove,
			do: doVerdict(OpApprove, "x", "rev", 2, ""), check: func(t *testing.T, c Card) {
				if c.Status != StatusDone || c.ClosedBy != "rev" || c.CloseNote != "see the branch" {
					t.Fatalf("approved: %+v", c)
				}
			}},
		{name: "approve by hand while a reviewer holds it", state: stReview, prep: reviewedBy("rev"),
			do: doVerdict(OpApprove, "alice", "", 0, ""), want: ErrConflict},
		{name: "approve by another reviewer", state: stReview, prep: reviewedBy("rev"),
			do: doVerdict(OpApprove, "alice", "rev2", 2, ""), want: ErrFenced},
		{name: "self-approval", state: stReview, do: doVerdict(OpApprove, "w1", "", 0, ""), want: ErrSelfReview},
		// Either identity of the submitter is refused, whatever the other
		// identity of the verdict, before any fence: the work stands.
		{name: "self-approval by the actor", state: stReview, do: doVerdict(OpApprove, "worker", "", 0, ""), want: ErrSelfReview},
		{name: "self-approval naming the submitter's owner", state: stReview, do: doVerdict(OpApprove, "alice", "w1", 1, ""), want: ErrSelfReview},
		{name: "self-approval by the actor holding a review lease", state: stReview, prep: reviewedBy("rev"),
			do: doVerdict(OpApprove, "worker", "rev", 2, ""), want: ErrSelfReview},
		{name: "approve a card that moved on", state: stReview, do: doVerdict(OpApprove, "alice", "", 5, ""), want: ErrFenced},
		{name: "approve ready", state: stReady, do: doVerdict(OpApprove, "alice", "", 0, ""), want: ErrConflict},
		{name: "approve ready as a reviewer", state: stReady, do: doVerdict(OpApprove, "alice", "rev", 0, ""), want: ErrFenced},
		{name: "approve missing card", state: stAbsent, do: doVerdict(OpApprove, "alice", "", 0, ""), want: ErrNotFound},

		{name: "reject", state: stReview, op: OpReject, do: doVerdict(OpReject, "alice", "", 0, "tests fail on arm64"), check: func(t *testing.T, c Card) {
			wantStatus(StatusReady)(t, c)
			if c.RejectReason != "tests fail on arm64" || c.Attempts != 1 || c.Branch != "bl/A" {
				t.Fatalf("rejected: %+v", c)
			}
		}},
		{name: "reject by its author", state: stReview, do: doVerdict(OpReject, "w1", "", 0, "not yet"), want: ErrSelfReview},
		{name: "reject by its author's actor", state: stReview, do: doVerdict(OpReject, "worker", "", 0, "not yet"), want: ErrSelfReview},
		{name: "reject without reason", state: stReview, do: doVerdict(OpReject, "alice", "", 0, ""), want: ErrInvalid},
		{name: "reject done", state: stDone, do: doVerdict(OpReject, "alice", "", 0, "x"), want: ErrConflict},
	}
}

func reviewReplayables() []replayable {
	return []replayable{
		{op: OpReview, state: stClaimed, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Submit(e.ctx, LeaseRequest{Mutation: mu, ID: "A", Owner: "w1", Epoch: 1})
		}},
		{op: OpClaimReview, state: stReview, do: func(e *env, mu Mutation) (Card, error) {
			c, err := e.b.ClaimReview(e.ctx, ClaimRequest{Mutation: mu, Owner: "rev", TTL: time.Minute})
			if c == nil {
				return Card{}, err
			}
			return *c, err
		}},
		{op: OpApprove, state: stReview, do: func(e *env, mu Mutation) (Card, error) {
			return e.b.Approve(e.ctx, ReviewRequest{Mutation: mu, ID: "A"})
		}},
		{op: OpReject, state: stReview, do: func(e *env, mu Mutation) (Card, error) {
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
	if _, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: worker, ID: "A", Owner: "w1", Epoch: c.ClaimEpoch}); err != nil {
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
	if got.Status != StatusReady || got.RejectReason != "missing test" || got.Attempts != 1 {
		t.Fatalf("after reject: %+v", got)
	}
	c = e.claim("A", "w2", time.Minute)
	if c.Attempts != 2 || c.RejectReason != "missing test" {
		t.Fatalf("reclaimed after reject: %+v", c)
	}
	if _, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: worker, ID: "A", Owner: "w2", Epoch: c.ClaimEpoch}); err != nil {
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
		case OpReview, OpClaimReview, OpApprove, OpReject:
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
	for _, self := range []ReviewRequest{{Mutation: Mutation{Actor: "w1"}, ID: "A"}, {Mutation: worker, ID: "A"}} {
		if _, err := e.b.Approve(e.ctx, self); err != nil {
			t.Fatalf("self-approval with allow_self: %v", err)
		}
		e = setupState(t, stReview)
		if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"review":{"allow_self":true}}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.b = e.open()
	}
}

// TestSelfApprovalLineRefused: an approve by the submitter written into the
// ledger by hand (or by an older bl, which checked only in the command)
// does not fold: the card stays in review, the fold records a conflict and
// doctor lists it as a self-approval. A reviewer can still decide it.
func TestSelfApprovalLineRefused(t *testing.T) {
	for _, self := range []Event{
		{Actor: "worker"},                         // the submitter's actor
		{Actor: "someone-else", Owner: "w1"},      // the submitter's owner
		{Actor: "worker", Owner: "rev", Epoch: 1}, // the actor, naming another owner
		{Actor: "worker", Reason: "no", Epoch: 1}, // a reject
	} {
		e := setupState(t, stReview)
		last := e.lastEvent()
		ev := self
		ev.V, ev.ID, ev.At, ev.Op, ev.Card = 3, "ffffffffffffff01", last.At.Add(time.Millisecond), OpApprove, "A"
		if ev.Reason != "" {
			ev.Op = OpReject
		}
		if ev.Epoch == 0 {
			ev.Epoch = 1
		}
		line, err := EncodeLine(&ev)
		if err != nil {
			t.Fatal(err)
		}
		e.appendRaw(line)
		b := e.open()
		if c, _ := b.Get("A"); c.Status != StatusReview {
			t.Fatalf("%+v: a self-approval folded: %+v", self, c)
		}
		rep, err := Diagnose(e.dir, e.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.SelfApprovals) != 1 || rep.SelfApprovals[0].Event != ev.ID || len(rep.Conflicts) != 1 {
			t.Fatalf("%+v: doctor lists %+v (conflicts %+v)", self, rep.SelfApprovals, rep.Conflicts)
		}
		if _, err := b.Approve(e.ctx, ReviewRequest{Mutation: Mutation{Actor: "carol"}, ID: "A"}); err != nil {
			t.Fatalf("approve by a reviewer after the refused line: %v", err)
		}
	}
}
