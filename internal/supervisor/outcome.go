package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bl-backlog/bl/internal/gitwork"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/lock"
)

// How a run is recorded: the lease write its end calls for, made safe to
// retry, and what is said of it.

// leaseOp is a write that ends a lease: complete, submit, fail or release.
type leaseOp = func(context.Context, ledger.LeaseRequest) (ledger.Card, error)

// outcome is the lease write for how the command ended: complete (or
// submit for review) on exit 0 with the worktree's head, release when a
// signal ended it, fail with the last lines of stderr otherwise.
func (s *supervisor) outcome(ctx context.Context, card ledger.Card, res *Result, ex exitInfo, timedOut bool, tree *cardTree, stderrTail string) (ledger.LeaseRequest, leaseOp) {
	lease := ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: s.o.Actor, RequestID: newRequestID()}, ID: card.ID, Owner: card.ClaimOwner, Epoch: card.ClaimEpoch}
	var op leaseOp
	switch {
	case timedOut:
		res.Outcome, op = Failed, s.o.Backlog.Fail
		lease.Reason = failReason(fmt.Sprintf("timed out after %s (%s)", s.o.Timeout, ex.how), stderrTail)
	case res.ExitCode == 0:
		res.Outcome, op = Completed, s.o.Backlog.Complete
		if s.o.Review {
			res.Outcome, op = Reviewed, s.o.Backlog.Submit
		}
		if tree != nil {
			lease.Branch = tree.Branch
			if head, err := gitwork.Head(ctx, tree.repo, tree.Branch); err == nil {
				lease.Commit = head
			} else {
				s.logf("%s: no head commit of %s to record: %v", card.ID, tree.Branch, err)
			}
		}
	case res.Signal != nil:
		res.Outcome, op = Interrupted, s.o.Backlog.Release
		lease.Reason = fmt.Sprintf("interrupted (%s): %s", res.Signal, ex.how)
	default:
		res.Outcome, op = Failed, s.o.Backlog.Fail
		how := ex.how
		if tree != nil {
			how += "; worktree kept at " + tree.Dir
		}
		lease.Reason = failReason(how, stderrTail)
	}
	return lease, op
}

// record makes the outcome's write, once no heartbeat runs. While the
// arbiter is down it is tried again, under its request id, as long as the
// lease lasts (the command's work is done) or until a signal says to stop.
func (s *supervisor) record(ctx context.Context, w *leaseWatch, lease ledger.LeaseRequest, op leaseOp) (ledger.Card, error) {
	w.close()
	c, err := retryLocked(func() (ledger.Card, error) { return s.o.Leases.Write(ctx, lease, op) })
	for unreachable(err) && time.Until(w.expires) > s.o.Grace {
		s.logf("%s: recording the outcome failed, trying again until the lease runs out at %s: %v", lease.ID, w.expires.Format(time.RFC3339), err)
		select {
		case sig := <-s.o.Signals:
			s.logf("%s: %s: no longer trying to record the outcome; the lease runs out at %s", lease.ID, sig, w.expires.Format(time.RFC3339))
			return c, err
		case <-time.After(min(max(w.ttl/10, 100*time.Millisecond), time.Until(w.expires))):
		}
		c, err = retryLocked(func() (ledger.Card, error) { return s.o.Leases.Write(ctx, lease, op) })
	}
	return c, err
}

// removeTree removes the worktree of a card done, unless Keep says not
// to. The branch stays; only the checkout goes.
func (s *supervisor) removeTree(ctx context.Context, card ledger.Card, tree *cardTree, o Outcome) {
	if tree == nil || (o != Completed && o != Reviewed) || s.o.Worktree.Keep {
		return
	}
	unlock, err := worktreeAdminLock(ctx, tree.common)
	if err == nil {
		var kept string
		kept, err = gitwork.Remove(ctx, tree.repo, tree.Dir, tree.Branch)
		unlock()
		if err == nil && kept != "" {
			s.logf("%s: worktree kept at %s: it is %s", card.ID, tree.Dir, kept)
		}
	}
	if err != nil {
		s.logf("%s: could not remove the worktree %s: %v", card.ID, tree.Dir, err)
	}
}

// fencedAtEnd is the result of a command that ended after its lease was
// lost: the outcome's write was refused, nothing is recorded.
func (s *supervisor) fencedAtEnd(card ledger.Card, res Result, ex exitInfo, err error) Result {
	s.logf("%s: the command ended (%s) after the lease was lost; nothing recorded: %v", card.ID, ex.how, err)
	res.Outcome = Fenced
	if cur, gerr := s.o.Backlog.Get(card.ID); gerr == nil {
		res.Card = cur
	}
	return res
}

// logOutcome says on stderr what became of the card (c as recorded).
func (s *supervisor) logOutcome(card ledger.Card, res Result, ex exitInfo, timedOut bool, reason string, c ledger.Card) {
	switch res.Outcome {
	case Completed:
		s.logf("%s done in %s", card.ID, res.Took.Round(time.Millisecond))
	case Reviewed:
		s.logf("%s sent to review in %s", card.ID, res.Took.Round(time.Millisecond))
	case Interrupted:
		s.logf("%s released: %s", card.ID, oneLine(reason))
	default:
		how := ex.how
		if timedOut {
			how = fmt.Sprintf("timed out after %s, %s", s.o.Timeout, how)
		}
		if c.Status == ledger.StatusBlocked {
			s.logf("%s failed (%s) and is blocked: %s", card.ID, how, oneLine(c.BlockedReason))
		} else if c.DeferUntil != nil {
			s.logf("%s failed (%s); retry after %s", card.ID, how, c.DeferUntil.Format(time.RFC3339))
		} else {
			s.logf("%s failed (%s)", card.ID, how)
		}
	}
}

// unreachable reports an arbiter that could not be reached (exit 7 on the
// command line): the write may be tried again with its request id.
func unreachable(err error) bool {
	var ad interface{ ArbiterDown() bool }
	return errors.As(err, &ad) && ad.ArbiterDown()
}

// retryLocked runs fn again, up to three times in all, while the lock is
// busy. fn carries a request id, so a retry never records twice.
func retryLocked(fn func() (ledger.Card, error)) (ledger.Card, error) {
	var c ledger.Card
	var err error
	for range 3 {
		if c, err = fn(); !errors.Is(err, lock.ErrTimeout) {
			break
		}
	}
	return c, err
}

// failReason is the fail's reason: how the command ended and the last
// lines of its stderr.
func failReason(how, stderrTail string) string {
	if stderrTail = strings.TrimSpace(stderrTail); stderrTail == "" {
		return how
	}
	return how + ": " + stderrTail
}

// newRequestID makes the outcome's write safe to retry.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "bl-run-" + hex.EncodeToString(b[:])
}
