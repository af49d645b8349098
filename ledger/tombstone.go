package ledger

import (
	"context"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

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
