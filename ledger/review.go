package ledger

import (
	"context"
	"fmt"
	"time"
)

// checkWork validates the commit and branch an event records.
func checkWork(c *Card, e *Event) error {
	if len(e.Commit) > MaxRefLen || len(e.Branch) > MaxRefLen {
		return rule(ErrInvalid, "commit or branch of %s is longer than %d bytes", c.ID, MaxRefLen)
	}
	return nil
}

// MaxRefLen bounds a recorded commit or branch name.
const MaxRefLen = 256

// recordWork keeps the commit and branch e names.
func recordWork(c *Card, e *Event) {
	if e.Commit != "" {
		c.Commit = e.Commit
	}
	if e.Branch != "" {
		c.Branch = e.Branch
	}
}

// checkSubmit: an owner's request is fenced like a complete; without an
// owner it is a person sending a card that is not done to review by hand.
func checkSubmit(_ *State, c *Card, e *Event) error {
	switch c.Status {
	case StatusDone:
		return rule(ErrConflict, "card %s is already done; nothing to review", c.ID)
	case StatusReview:
		return rule(ErrConflict, "card %s is already in review", c.ID)
	}
	if err := fenceIfOwned(c, e); err != nil {
		return err
	}
	if len(e.Reason) > MaxNoteLen {
		return rule(ErrInvalid, "note on %s is longer than %d bytes", c.ID, MaxNoteLen)
	}
	return checkWork(c, e)
}

func applySubmit(_ *State, c *Card, e *Event) {
	c.clearLease()
	c.Status = StatusReview
	c.CloseNote = e.Reason
	c.SubmittedBy = closer(e)
	c.RejectReason = ""
	c.BlockedReason = ""
	recordWork(c, e)
}

func checkClaimReview(_ *State, c *Card, e *Event) error {
	if e.Owner == "" {
		return rule(ErrInvalid, "a review claim of %s needs an owner", e.Card)
	}
	if e.TTLSeconds < 1 || e.TTLSeconds > maxTTLSeconds {
		return rule(ErrInvalid, "a review claim of %s needs a ttl from 1s to %s (MaxTTL)", e.Card, MaxTTL)
	}
	if c.Status != StatusReview {
		return rule(ErrConflict, "card %s is %s, not in review", c.ID, c.Status)
	}
	if c.reviewLeased(e.clock()) && c.ClaimOwner != e.Owner {
		return rule(ErrConflict, "card %s is under review by %s until %s", c.ID, c.ClaimOwner, c.LeaseExpiresAt.Format(time.RFC3339))
	}
	if e.ExpectVersion != c.Version {
		return rule(ErrConflict, "card %s changed (version %d, claim expected %d)", c.ID, c.Version, e.ExpectVersion)
	}
	if e.Epoch != c.ClaimEpoch+1 {
		return rule(ErrConflict, "review claim of %s has epoch %d, next epoch is %d", c.ID, e.Epoch, c.ClaimEpoch+1)
	}
	return nil
}

// applyClaimReview leases the card to a reviewer; its status stays review
// and its attempts are the worker's, untouched.
func applyClaimReview(_ *State, c *Card, e *Event) {
	now := e.clock()
	c.ClaimOwner = e.Owner
	c.ClaimEpoch = e.Epoch
	c.ClaimedAt = timePtr(now)
	c.ClaimTTLSeconds = e.TTLSeconds
	c.LeaseExpiresAt = timePtr(now.Add(time.Duration(e.TTLSeconds) * time.Second))
	c.LastHeartbeatAt = nil
}

// checkVerdict is the rule of approve and reject: the card is in review at
// the epoch the reviewer saw (a card that moved on since is refused), and a
// reviewer holding a live review lease is the only one who may decide it.
// A verdict that names an owner is that reviewer's, fenced like a
// heartbeat.
func checkVerdict(_ *State, c *Card, e *Event) error {
	if c.Status != StatusReview {
		return rule(ErrFenced, "card %s is %s, not in review: it moved on; look again", c.ID, c.Status)
	}
	if e.Epoch != c.ClaimEpoch {
		return rule(ErrFenced, "%s of %s names epoch %d but the card is at epoch %d: it moved on; look again", e.Op, c.ID, e.Epoch, c.ClaimEpoch)
	}
	if e.Owner != "" && c.ClaimOwner != e.Owner {
		return rule(ErrFenced, "%s does not hold the review of %s (held by %s)", e.Owner, c.ID, orDash(c.ClaimOwner))
	}
	if e.Owner == "" && c.reviewLeased(e.clock()) {
		return rule(ErrConflict, "card %s is under review by %s until %s", c.ID, c.ClaimOwner, c.LeaseExpiresAt.Format(time.RFC3339))
	}
	if e.Op == OpReject && e.Reason == "" {
		return rule(ErrInvalid, "a reject of %s needs a reason", c.ID)
	}
	if len(e.Reason) > MaxNoteLen {
		return rule(ErrInvalid, "reason for the review of %s is longer than %d bytes", c.ID, MaxNoteLen)
	}
	return nil
}

func applyApprove(_ *State, c *Card, e *Event) {
	c.clearLease()
	c.Status = StatusDone
	c.ClosedAt = timePtr(e.clock())
	c.ClosedBy = closer(e)
	if e.Reason != "" {
		c.CloseNote = e.Reason
	}
	c.RejectReason = ""
}

// applyReject sends the card back to the pool with the reason kept; the
// attempts used so far stay, as do branch and commit, so the next worker
// goes on from the work under review.
func applyReject(_ *State, c *Card, e *Event) {
	c.clearLease()
	c.Status = StatusReady
	c.RejectReason = e.Reason
	c.CloseNote = ""
}

// ReviewRequest is a reviewer's verdict on a card in review. With Owner
// (and Epoch) it is the verdict of the reviewer holding the review lease;
// without, Epoch is the card's epoch as the reviewer saw it, 0 for the
// current one.
type ReviewRequest struct {
	Mutation
	ID     string
	Owner  string
	Epoch  int64
	Reason string // approve: a note; reject: why (required)
}

// ErrSelfReview: the reviewer sent the card to review and config.json does
// not allow self-approval (review.allow_self).
var ErrSelfReview = fmt.Errorf("%w: self-approval", ErrConflict)

// Approve marks a card in review done. The actor (or owner) who sent it to
// review may not approve it unless review.allow_self is set.
func (b *Backlog) Approve(ctx context.Context, r ReviewRequest) (Card, error) {
	return b.verdict(ctx, r, OpApprove)
}

// Reject sends a card in review back to ready with the reason kept.
func (b *Backlog) Reject(ctx context.Context, r ReviewRequest) (Card, error) {
	if r.Reason == "" {
		return Card{}, rule(ErrInvalid, "reject needs a reason")
	}
	return b.verdict(ctx, r, OpReject)
}

func (b *Backlog) verdict(ctx context.Context, r ReviewRequest, op Op) (Card, error) {
	if err := ValidID(r.ID); err != nil {
		return Card{}, err
	}
	allowSelf := b.Config().Review.AllowSelf
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), op, func(s *State, _ time.Time) ([]*Event, error) {
		c := s.card(r.ID)
		if c == nil {
			return nil, rule(ErrNotFound, "card %s not found", r.ID)
		}
		e := &Event{Op: op, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason}
		if r.Epoch == 0 {
			e.Epoch = c.ClaimEpoch
		}
		reviewer := r.Owner
		if reviewer == "" {
			reviewer = r.Mutation.Actor
		}
		if op == OpApprove && !allowSelf && c.Status == StatusReview && c.SubmittedBy != "" && c.SubmittedBy == reviewer {
			return nil, Errorf(ErrSelfReview, "%s sent %s to review and cannot approve it: another reviewer must (or set review.allow_self: true in config.json)", reviewer, r.ID)
		}
		return []*Event{e}, nil
	})
	if err != nil {
		return Card{}, err
	}
	return cards[0], nil
}

// Submit sends a card to review: the lease (when Owner names it, fenced)
// ends and the note, commit and branch are recorded.
func (b *Backlog) Submit(ctx context.Context, r LeaseRequest) (Card, error) {
	return b.single(ctx, r.Mutation, &Event{Op: OpReview, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason, Commit: r.Commit, Branch: r.Branch})
}

// ClaimReview takes a review lease on the best card waiting for review
// that owner may review (one it did not send to review, unless
// review.allow_self), or on r.ID. A nil card means none was waiting.
func (b *Backlog) ClaimReview(ctx context.Context, r ClaimRequest) (*Card, error) {
	ttl, err := ttlSeconds(r.TTL, DefaultTTL)
	if err != nil {
		return nil, err
	}
	if r.ID != "" {
		if err := ValidID(r.ID); err != nil {
			return nil, err
		}
	}
	allowSelf := b.Config().Review.AllowSelf
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), OpClaimReview, func(s *State, at time.Time) ([]*Event, error) {
		var c *Card
		if r.ID != "" {
			if c = s.card(r.ID); c == nil {
				return nil, rule(ErrNotFound, "card %s not found", r.ID)
			}
			if !allowSelf && c.Status == StatusReview && c.SubmittedBy == r.Owner {
				return nil, Errorf(ErrSelfReview, "%s sent %s to review and cannot review it (set review.allow_self: true in config.json to allow)", r.Owner, r.ID)
			}
		} else {
			f := Filter{Phase: r.Phase, Label: r.Label}
			s.inClaimOrder(time.Time{}, func(cand *Card) bool {
				if cand.Status == StatusReview && !cand.reviewLeased(at) && f.match(s, cand, at) && (allowSelf || cand.SubmittedBy != r.Owner) {
					c = cand
				}
				return c == nil
			})
			if c == nil {
				return nil, nil
			}
		}
		return []*Event{{Op: OpClaimReview, Card: c.ID, Owner: r.Owner, TTLSeconds: ttl, ExpectVersion: c.Version, Epoch: c.ClaimEpoch + 1}}, nil
	})
	if err != nil || len(cards) == 0 {
		return nil, err
	}
	return &cards[0], nil
}
