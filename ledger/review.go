package ledger

import (
	"context"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

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

// Approve marks a card in review done. Neither the actor nor the owner who
// sent it to review may approve (or reject) it unless review.allow_self is
// set: the fold refuses it with ErrSelfReview.
func (b *Backlog) Approve(ctx context.Context, r ReviewRequest) (Card, error) {
	return b.verdict(ctx, r, OpApprove)
}

// Reject sends a card in review back to ready with the reason kept.
func (b *Backlog) Reject(ctx context.Context, r ReviewRequest) (Card, error) {
	if r.Reason == "" {
		return Card{}, wire.Rule(ErrInvalid, "reject needs a reason")
	}
	return b.verdict(ctx, r, OpReject)
}

func (b *Backlog) verdict(ctx context.Context, r ReviewRequest, op Op) (Card, error) {
	if err := ValidID(r.ID); err != nil {
		return Card{}, err
	}
	allowSelf := b.Config().Review.AllowSelf
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), op, func(s *fold.State, _ time.Time) ([]*Event, error) {
		c := s.Find(r.ID)
		if c == nil {
			return nil, wire.Rule(ErrNotFound, "card %s not found", r.ID)
		}
		// The fold refuses a verdict by the submitter (fold.SelfReview);
		// force: true carries review.allow_self into the event.
		e := &Event{Op: op, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason, Force: allowSelf}
		if r.Epoch == 0 {
			e.Epoch = c.ClaimEpoch
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
// that owner and the actor may review (one neither sent to review, unless
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
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), OpClaimReview, func(s *fold.State, at time.Time) ([]*Event, error) {
		var c *Card
		if r.ID != "" {
			if c = s.Find(r.ID); c == nil {
				return nil, wire.Rule(ErrNotFound, "card %s not found", r.ID)
			}
			if !allowSelf && c.Status == StatusReview && fold.SelfReview(c, r.Mutation.Actor, r.Owner) {
				return nil, Errorf(ErrSelfReview, "%s: %s sent %s to review and cannot review it (set review.allow_self: true in config.json to allow)", fold.SelfReviewRefused, fold.Submitter(c), r.ID)
			}
		} else {
			f := Filter{Phase: r.Phase, Label: r.Label}
			s.InClaimOrder(time.Time{}, func(cand *Card) bool {
				if cand.Status == StatusReview && !cand.ReviewLeased(at) && f.Match(s, cand, at) && (allowSelf || !fold.SelfReview(cand, r.Mutation.Actor, r.Owner)) {
					c = cand
				}
				return c == nil
			})
			if c == nil {
				return nil, nil
			}
		}
		expect := c.Version
		if r.Arbitrated {
			expect = 0 // decided by a claim arbiter (see ClaimRequest)
		}
		return []*Event{{Op: OpClaimReview, Card: c.ID, Owner: r.Owner, TTLSeconds: ttl, ExpectVersion: expect, Epoch: c.ClaimEpoch + 1}}, nil
	})
	if err != nil || len(cards) == 0 {
		return nil, err
	}
	return &cards[0], nil
}
