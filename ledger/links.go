package ledger

import (
	"context"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

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

// LinksTo is State.LinksTo on the current state.
func (b *Backlog) LinksTo(id string) (in []Link, err error) {
	err = b.view(func(s *fold.State, _ time.Time) error {
		in = s.LinksTo(id)
		return nil
	})
	return in, err
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
