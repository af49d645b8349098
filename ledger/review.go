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
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), op, func(s *fold.State, _ time.Time) ([]*wire.Event, error) {
		c := s.Find(r.ID)
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
			return nil, wire.Errorf(fold.ErrSelfReview, "%s sent %s to review and cannot approve it: another reviewer must (or set review.allow_self: true in config.json)", reviewer, r.ID)
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
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), wire.OpClaimReview, func(s *fold.State, at time.Time) ([]*wire.Event, error) {
		var c *wire.Card
		if r.ID != "" {
			if c = s.Find(r.ID); c == nil {
				return nil, wire.Rule(wire.ErrNotFound, "card %s not found", r.ID)
			}
			if !allowSelf && c.Status == wire.StatusReview && c.SubmittedBy == r.Owner {
				return nil, wire.Errorf(fold.ErrSelfReview, "%s sent %s to review and cannot review it (set review.allow_self: true in config.json to allow)", r.Owner, r.ID)
			}
		} else {
			f := fold.Filter{Phase: r.Phase, Label: r.Label}
			s.InClaimOrder(time.Time{}, func(cand *wire.Card) bool {
				if cand.Status == wire.StatusReview && !cand.ReviewLeased(at) && f.Match(s, cand, at) && (allowSelf || cand.SubmittedBy != r.Owner) {
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
