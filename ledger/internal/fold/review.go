package fold

import (
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// checkWork validates the commit and branch an event records.
func checkWork(c *wire.Card, e *wire.Event) error {
	if len(e.Commit) > MaxRefLen || len(e.Branch) > MaxRefLen {
		return wire.Rule(wire.ErrInvalid, "commit or branch of %s is longer than %d bytes", c.ID, MaxRefLen)
	}
	return nil
}

// MaxRefLen bounds a recorded commit or branch name.
const MaxRefLen = 256

// recordWork keeps the commit and branch e names.
func recordWork(c *wire.Card, e *wire.Event) {
	if e.Commit != "" {
		c.Commit = e.Commit
	}
	if e.Branch != "" {
		c.Branch = e.Branch
	}
}

// checkSubmit: an owner's request is fenced like a complete; without an
// owner it is a person sending a card that is not done to review by hand.
func checkSubmit(_ *State, c *wire.Card, e *wire.Event) error {
	switch c.Status {
	case wire.StatusDone:
		return wire.Rule(wire.ErrConflict, "card %s is already done; nothing to review", c.ID)
	case wire.StatusReview:
		return wire.Rule(wire.ErrConflict, "card %s is already in review", c.ID)
	}
	if err := fenceIfOwned(c, e); err != nil {
		return err
	}
	if len(e.Reason) > wire.MaxNoteLen {
		return wire.Rule(wire.ErrInvalid, "note on %s is longer than %d bytes", c.ID, wire.MaxNoteLen)
	}
	return checkWork(c, e)
}

func applySubmit(_ *State, c *wire.Card, e *wire.Event) {
	c.ClearLease()
	c.Status = wire.StatusReview
	c.CloseNote = e.Reason
	c.SubmittedBy = wire.Closer(e)
	c.SubmittedActor = e.Actor
	c.RejectReason = ""
	c.BlockedReason = ""
	recordWork(c, e)
}

func checkClaimReview(_ *State, c *wire.Card, e *wire.Event) error {
	if e.Owner == "" {
		return wire.Rule(wire.ErrInvalid, "a review claim of %s needs an owner", e.Card)
	}
	if e.TTLSeconds < 1 || e.TTLSeconds > wire.MaxTTLSeconds {
		return wire.Rule(wire.ErrInvalid, "a review claim of %s needs a ttl from 1s to %s (MaxTTL)", e.Card, wire.MaxTTL)
	}
	if c.Status != wire.StatusReview {
		return wire.Rule(wire.ErrConflict, "card %s is %s, not in review", c.ID, c.Status)
	}
	if c.ReviewLeased(e.WriterClock()) && c.ClaimOwner != e.Owner {
		return wire.Rule(wire.ErrConflict, "card %s is under review by %s until %s", c.ID, c.ClaimOwner, c.LeaseExpiresAt.Format(time.RFC3339))
	}
	return checkNextLease(c, e, "review claim")
}

// applyClaimReview leases the card to a reviewer; its status stays review
// and its attempts are the worker's, untouched.
func applyClaimReview(_ *State, c *wire.Card, e *wire.Event) {
	grantLease(c, e, e.WriterClock())
}

// checkVerdict is the rule of approve and reject: the card is in review at
// the epoch the reviewer saw (a card that moved on since is refused), and a
// reviewer holding a live review lease is the only one who may decide it.
// A verdict that names an owner is that reviewer's, fenced like a
// heartbeat. A verdict by whoever sent the card to review is refused before
// the fence (SelfReview): it is a conflict, and the work stands.
func checkVerdict(_ *State, c *wire.Card, e *wire.Event) error {
	if c.Status != wire.StatusReview {
		if e.Owner != "" { // the reviewer's review lease is gone with it
			return wire.Rule(wire.ErrFenced, "card %s is %s, not in review: it moved on; look again", c.ID, c.Status)
		}
		return wire.Rule(wire.ErrConflict, "card %s is %s, not in review: only a card sent to review (bl complete --review) is approved or rejected", c.ID, c.Status)
	}
	if !e.Force && SelfReview(c, e.Actor, e.Owner) {
		return wire.Rule(ErrSelfReview, "%s: %s sent %s to review and may not %s it; another reviewer must (or set review.allow_self: true in config.json)", SelfReviewRefused, Submitter(c), c.ID, e.Op)
	}
	if e.Epoch != c.ClaimEpoch {
		return wire.Rule(wire.ErrFenced, "%s of %s names epoch %d but the card is at epoch %d: it moved on; look again", e.Op, c.ID, e.Epoch, c.ClaimEpoch)
	}
	if e.Owner != "" && c.ClaimOwner != e.Owner {
		return wire.Rule(wire.ErrFenced, "%s does not hold the review of %s (held by %s)", e.Owner, c.ID, orDash(c.ClaimOwner))
	}
	if e.Owner == "" && c.ReviewLeased(e.WriterClock()) {
		return wire.Rule(wire.ErrConflict, "card %s is under review by %s until %s", c.ID, c.ClaimOwner, c.LeaseExpiresAt.Format(time.RFC3339))
	}
	if e.Op == wire.OpReject && e.Reason == "" {
		return wire.Rule(wire.ErrInvalid, "a reject of %s needs a reason", c.ID)
	}
	if len(e.Reason) > wire.MaxNoteLen {
		return wire.Rule(wire.ErrInvalid, "reason for the review of %s is longer than %d bytes", c.ID, wire.MaxNoteLen)
	}
	return nil
}

func applyApprove(_ *State, c *wire.Card, e *wire.Event) {
	c.ClearLease()
	c.Status = wire.StatusDone
	c.ClosedAt = wire.TimePtr(e.WriterClock())
	c.ClosedBy = wire.Closer(e)
	if e.Reason != "" {
		c.CloseNote = e.Reason
	}
	c.RejectReason = ""
}

// applyReject sends the card back to the pool with the reason kept; the
// attempts used so far stay, as do branch and commit, so the next worker
// goes on from the work under review.
func applyReject(_ *State, c *wire.Card, e *wire.Event) {
	c.ClearLease()
	c.Status = wire.StatusReady
	c.RejectReason = e.Reason
	c.CloseNote = ""
}

// ErrSelfReview: the reviewer sent the card to review and config.json does
// not allow self-approval (review.allow_self). A conflict, not a fence: the
// work under review stands, someone else must decide it.
var ErrSelfReview = fmt.Errorf("%w: self-approval", wire.ErrConflict)

// SelfReviewRefused opens the reason of every verdict the gate refuses, so
// doctor can tell them among the conflicts a ledger records.
const SelfReviewRefused = "self-review refused"

// SelfReview reports whether a verdict sent by actor (and owner, when it
// names one) comes from either identity that sent c to review. A verdict
// event says the gate was waived (review.allow_self, read when it was
// written) with force: true; the fold takes the policy from the event, as it
// takes a retry backoff, so every clone folds it alike. Names are not
// authentication: this stops a careless or confused agent, not anyone who
// can write the ledger.
func SelfReview(c *wire.Card, actor, owner string) bool {
	is := func(who string) bool {
		return who != "" && (who == c.SubmittedBy || who == c.SubmittedActor)
	}
	return is(actor) || is(owner)
}

// Submitter names who sent c to review, for messages.
func Submitter(c *wire.Card) string {
	if c.SubmittedActor != "" && c.SubmittedActor != c.SubmittedBy {
		return c.SubmittedBy + " (actor " + c.SubmittedActor + ")"
	}
	return c.SubmittedBy
}
