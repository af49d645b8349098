package ledger

// The requests of a card's way through review, hand-off, deletion and
// typed links.

import (
	"context"
	"strings"
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
	ttl, err := r.leaseSeconds()
	if err != nil {
		return nil, err
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

// A handoff passes a lease from its holder to another owner in one event:
// the holder names itself and the epoch it holds (fenced like a heartbeat),
// and the card is then held by the new owner at the next epoch, with a
// fresh lease of the event's ttl (the lease's own when it carries none).
// Progress, checkpoint, notes and attempts stay: it is one attempt going
// on in other hands. Nobody can claim in between, and the old holder is
// fenced from then on like any holder of an older epoch.

// HandoffRequest passes the lease Owner holds at Epoch to To.
type HandoffRequest struct {
	Mutation
	ID    string
	Owner string
	Epoch int64
	To    string
	TTL   time.Duration // the new holder's lease; 0 keeps the lease's ttl
}

// Handoff passes a claimed card from its holder to another owner, who holds
// it at the next epoch. The old holder is fenced from then on.
func (b *Backlog) Handoff(ctx context.Context, r HandoffRequest) (Card, error) {
	var ttl int64
	if r.TTL != 0 {
		var err error
		if ttl, err = ttlSeconds(r.TTL, 0); err != nil {
			return Card{}, err
		}
	}
	return b.single(ctx, r.Mutation, &Event{Op: wire.OpHandoff, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, To: r.To, TTLSeconds: ttl})
}

// A delete is a tombstone: the card stays in the fold (and its history in
// the ledger) marked deleted, and leaves every list, the ready queue,
// boards and exports; no op but restore applies to it, and nothing new may
// name it as parent, dependency or link. A delete drops any lease (the
// holder is fenced). A restore undoes the delete: the card is back as it
// was, its lease gone.

// DeleteRequest deletes a card. A card others depend on (or name as
// parent) is refused unless Force, which unlinks them first, in the same
// write.
type DeleteRequest struct {
	Mutation
	ID     string
	Reason string
	Force  bool
}

// Delete writes a tombstone for a card, and with Force first the unlink
// (or parent clearing) of every card that names it.
func (b *Backlog) Delete(ctx context.Context, r DeleteRequest) (Card, error) {
	if err := ValidID(r.ID); err != nil {
		return Card{}, err
	}
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), wire.OpDelete, func(s *fold.State, _ time.Time) ([]*Event, error) {
		c := s.Find(r.ID)
		if c == nil {
			return nil, wire.Rule(ErrNotFound, "card %s not found", r.ID)
		}
		if err := fold.CheckDeleted(c, &Event{Op: wire.OpDelete}); err != nil {
			return nil, err
		}
		deps := s.Dependents(r.ID)
		if len(deps) > 0 && !r.Force {
			names := make([]string, len(deps))
			for i, d := range deps {
				names[i] = d.ID + " (" + d.Type + ")"
			}
			return nil, wire.Rule(ErrConflict, "%s is named by %s; --force unlinks them and deletes it", r.ID, strings.Join(names, ", "))
		}
		var evs []*Event
		for _, d := range deps {
			if d.Type == "parent" {
				none := ""
				evs = append(evs, &Event{Op: OpUpdate, Card: d.ID, Fields: &Fields{Parent: &none}})
			} else {
				evs = append(evs, &Event{Op: OpUnlink, Card: d.ID, To: r.ID, LinkType: wire.WireLink(d.Type)})
			}
		}
		return append(evs, &Event{Op: wire.OpDelete, Card: r.ID, Reason: r.Reason}), nil
	})
	if err != nil {
		return Card{}, err
	}
	return cards[len(cards)-1], nil
}

// Restore undoes the delete of a card.
func (b *Backlog) Restore(ctx context.Context, m Mutation, id string) (Card, error) {
	return b.single(ctx, m, &Event{Op: wire.OpRestore, Card: id})
}

// LinkRequest links two cards with a type (LinkBlocks when empty).
type LinkRequest struct {
	Mutation
	From, To, Type string
}

// LinkTyped records a typed link from r.From to r.To. A holding link that
// would close a cycle of holding links is refused with the cycle named.
func (b *Backlog) LinkTyped(ctx context.Context, r LinkRequest) (Card, error) {
	if err := linkArgs(r); err != nil {
		return Card{}, err
	}
	return b.single(ctx, r.Mutation, &Event{Op: OpLink, Card: r.From, To: r.To, LinkType: wire.WireLink(r.Type)})
}

// UnlinkTyped removes the link of r.Type from r.From to r.To.
func (b *Backlog) UnlinkTyped(ctx context.Context, r LinkRequest) (Card, error) {
	if err := linkArgs(r); err != nil {
		return Card{}, err
	}
	return b.single(ctx, r.Mutation, &Event{Op: OpUnlink, Card: r.From, To: r.To, LinkType: wire.WireLink(r.Type)})
}

func linkArgs(r LinkRequest) error {
	if err := ValidID(r.To); err != nil {
		return err
	}
	return wire.ValidLinkType(r.Type)
}

// CloseAs completes a card as a duplicate of other (LinkDuplicates) or as
// superseded by it (LinkSupersedes): the link, unless it is there
// already, and the completion, in one write. Fenced on r.Owner like
// Complete, and rolls up epics like it.
func (b *Backlog) CloseAs(ctx context.Context, r LeaseRequest, typ, other string) (Card, error) {
	if err := ValidID(r.ID); err != nil {
		return Card{}, err
	}
	if err := linkArgs(LinkRequest{To: other, Type: typ}); err != nil {
		return Card{}, err
	}
	cards, err := b.completeRollingUp(ctx, r.Mutation.names(r.ID, nil), func(s *fold.State, _ time.Time) ([]*Event, error) {
		var evs []*Event
		if c := s.Find(r.ID); c == nil || !c.HasLink(typ, other) {
			evs = append(evs, &Event{Op: OpLink, Card: r.ID, To: other, LinkType: wire.WireLink(typ)})
		}
		return append(evs, &Event{Op: OpComplete, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason}), nil
	})
	if err != nil {
		return Card{}, err
	}
	return cards[len(cards)-1], nil
}
