package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// An epic is a card other cards name as parent. Its open children (not
// done, not deleted) hold it back: it is not claimable, and stands as
// waiting "on N children", until the last of them is done. The fold keeps
// each card's count of open children (Card.OpenChildren), so the rule
// reads the epic alone: a claim never looks for children.
//
// The rule is one of selection (claim, ready, list), not of the fold: a
// claim of an epic folded from the ledger is accepted whatever config.json
// says, so a change to epics.wait_for_children never turns history into
// conflicts. With epics.wait_for_children false an epic is claimable as
// any card.

// policy gives the state the rules of selection config.json sets.
func (b *Backlog) policy(s *fold.State) {
	if s != nil {
		s.SetClaimEpics(!b.cfg.Epics.Waits())
	}
}

// rollUp completes, under the lock, the epics whose last open child the
// write just completed (done holds the cards it left), when config.json
// sets epics.auto_close: each is its own event by the same actor, written
// after the child's, and an epic so completed may close its own parent.
// A rule that no longer holds by then leaves the epic open, claimable for
// its own closing work; a failure is a warning, the child's completion
// stands.
func (b *Backlog) rollUp(ctx context.Context, s *fold.State, m Mutation, done []Card) {
	if !b.cfg.Epics.AutoClose {
		return
	}
	for _, kid := range done {
		for kid.Status == StatusDone && kid.Parent != "" {
			if _, err := s.ReadCard(kid.Parent); err != nil {
				b.st.WarnHeld(fmt.Sprintf("epic %s was not completed with its last child %s: %v", kid.Parent, kid.ID, err))
				break
			}
			p := s.Find(kid.Parent)
			if p == nil || p.Status == StatusDone || p.Status == StatusClaimed || p.DeletedAt != nil || p.OpenChildren != 0 {
				break
			}
			e := &Event{Op: OpComplete, Card: p.ID, To: kid.ID, Reason: fmt.Sprintf("all children done (last: %s)", kid.ID)}
			cards, err := b.writeLocked(ctx, s, Mutation{Actor: m.Actor}, OpComplete, func(*fold.State, time.Time) ([]*Event, error) { return []*Event{e}, nil })
			if err != nil || len(cards) == 0 {
				b.st.WarnHeld(fmt.Sprintf("epic %s was not completed with its last child %s: %v", p.ID, kid.ID, err))
				break
			}
			kid = cards[0]
		}
	}
}

// completeRollingUp appends the events build returns, then rolls up the
// epics they finished (rollUp), all under one hold of the lock.
func (b *Backlog) completeRollingUp(ctx context.Context, m Mutation, build func(s *fold.State, at time.Time) ([]*Event, error)) (cards []Card, err error) {
	if m.Actor == "" {
		return nil, wire.Rule(ErrInvalid, "an actor is required")
	}
	err = b.st.Locked(ctx, func(s *fold.State) error {
		if err := readRequest(s, m.RequestID); err != nil {
			return err
		}
		cards, err = b.writeLocked(ctx, s, m, OpComplete, resolved(build))
		if err == nil {
			b.rollUp(ctx, s, m, cards)
		}
		return err
	})
	return cards, err
}
