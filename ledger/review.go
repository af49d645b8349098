package ledger

import (
	"context"
	"fmt"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"time"
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
	if e.ExpectVersion != c.Version {
		return wire.Rule(wire.ErrConflict, "card %s changed (version %d, claim expected %d)", c.ID, c.Version, e.ExpectVersion)
	}
	if e.Epoch != c.ClaimEpoch+1 {
		return wire.Rule(wire.ErrConflict, "review claim of %s has epoch %d, next epoch is %d", c.ID, e.Epoch, c.ClaimEpoch+1)
	}
	return nil
}

// applyClaimReview leases the card to a reviewer; its status stays review
// and its attempts are the worker's, untouched.
func applyClaimReview(_ *State, c *wire.Card, e *wire.Event) {
	now := e.WriterClock()
	c.ClaimOwner = e.Owner
	c.ClaimEpoch = e.Epoch
	c.ClaimedAt = wire.TimePtr(now)
	c.ClaimTTLSeconds = e.TTLSeconds
	c.LeaseExpiresAt = wire.TimePtr(now.Add(time.Duration(e.TTLSeconds) * time.Second))
	c.LastHeartbeatAt = nil
}

// checkVerdict is the rule of approve and reject: the card is in review at
// the epoch the reviewer saw (a card that moved on since is refused), and a
// reviewer holding a live review lease is the only one who may decide it.
// A verdict that names an owner is that reviewer's, fenced like a
// heartbeat.
func checkVerdict(_ *State, c *wire.Card, e *wire.Event) error {
	if c.Status != wire.StatusReview {
		return wire.Rule(wire.ErrFenced, "card %s is %s, not in review: it moved on; look again", c.ID, c.Status)
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
var ErrSelfReview = fmt.Errorf("%w: self-approval", wire.ErrConflict)

// Approve marks a card in review done. The actor (or owner) who sent it to
// review may not approve it unless review.allow_self is set.
func (b *Backlog) Approve(ctx context.Context, r ReviewRequest) (wire.Card, error) {
	return b.verdict(ctx, r, wire.OpApprove)
}

// Reject sends a card in review back to ready with the reason kept.
func (b *Backlog) Reject(ctx context.Context, r ReviewRequest) (wire.Card, error) {
	if r.Reason == "" {
		return wire.Card{}, wire.Rule(wire.ErrInvalid, "reject needs a reason")
	}
	return b.verdict(ctx, r, wire.OpReject)
}

func (b *Backlog) verdict(ctx context.Context, r ReviewRequest, op wire.Op) (wire.Card, error) {
	if err := wire.ValidID(r.ID); err != nil {
		return wire.Card{}, err
	}
	allowSelf := b.Config().Review.AllowSelf
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), op, func(s *State, _ time.Time) ([]*wire.Event, error) {
		c := s.card(r.ID)
		if c == nil {
			return nil, wire.Rule(wire.ErrNotFound, "card %s not found", r.ID)
		}
		e := &wire.Event{Op: op, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason}
		if r.Epoch == 0 {
			e.Epoch = c.ClaimEpoch
		}
		reviewer := r.Owner
		if reviewer == "" {
			reviewer = r.Mutation.Actor
		}
		if op == wire.OpApprove && !allowSelf && c.Status == wire.StatusReview && c.SubmittedBy != "" && c.SubmittedBy == reviewer {
			return nil, wire.Errorf(ErrSelfReview, "%s sent %s to review and cannot approve it: another reviewer must (or set review.allow_self: true in config.json)", reviewer, r.ID)
		}
		return []*wire.Event{e}, nil
	})
	if err != nil {
		return wire.Card{}, err
	}
	return cards[0], nil
}

// Submit sends a card to review: the lease (when Owner names it, fenced)
// ends and the note, commit and branch are recorded.
func (b *Backlog) Submit(ctx context.Context, r LeaseRequest) (wire.Card, error) {
	return b.single(ctx, r.Mutation, &wire.Event{Op: wire.OpReview, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason, Commit: r.Commit, Branch: r.Branch})
}

// ClaimReview takes a review lease on the best card waiting for review
// that owner may review (one it did not send to review, unless
// review.allow_self), or on r.ID. A nil card means none was waiting.
func (b *Backlog) ClaimReview(ctx context.Context, r ClaimRequest) (*wire.Card, error) {
	ttl, err := ttlSeconds(r.TTL, DefaultTTL)
	if err != nil {
		return nil, err
	}
	if r.ID != "" {
		if err := wire.ValidID(r.ID); err != nil {
			return nil, err
		}
	}
	allowSelf := b.Config().Review.AllowSelf
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), wire.OpClaimReview, func(s *State, at time.Time) ([]*wire.Event, error) {
		var c *wire.Card
		if r.ID != "" {
			if c = s.card(r.ID); c == nil {
				return nil, wire.Rule(wire.ErrNotFound, "card %s not found", r.ID)
			}
			if !allowSelf && c.Status == wire.StatusReview && c.SubmittedBy == r.Owner {
				return nil, wire.Errorf(ErrSelfReview, "%s sent %s to review and cannot review it (set review.allow_self: true in config.json to allow)", r.Owner, r.ID)
			}
		} else {
			f := Filter{Phase: r.Phase, Label: r.Label}
			s.inClaimOrder(time.Time{}, func(cand *wire.Card) bool {
				if cand.Status == wire.StatusReview && !cand.ReviewLeased(at) && f.match(s, cand, at) && (allowSelf || cand.SubmittedBy != r.Owner) {
					c = cand
				}
				return c == nil
			})
			if c == nil {
				return nil, nil
			}
		}
		return []*wire.Event{{Op: wire.OpClaimReview, Card: c.ID, Owner: r.Owner, TTLSeconds: ttl, ExpectVersion: c.Version, Epoch: c.ClaimEpoch + 1}}, nil
	})
	if err != nil || len(cards) == 0 {
		return nil, err
	}
	return &cards[0], nil
}
