package ledger

import (
	"context"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"slices"
	"strings"
	"time"
)

// A delete is a tombstone: the card stays in the fold (and its history in
// the ledger) marked deleted, and leaves every list, the ready queue,
// boards and exports; no op but restore applies to it, and nothing new may
// name it as parent, dependency or link. A delete drops any lease (the
// holder is fenced). A restore undoes the delete: the card is back as it
// was, its lease gone.

func checkDelete(_ *State, c *wire.Card, e *wire.Event) error {
	if len(e.Reason) > wire.MaxNoteLen {
		return wire.Rule(wire.ErrInvalid, "reason for deleting %s is longer than %d bytes", c.ID, wire.MaxNoteLen)
	}
	return nil
}

func applyDelete(_ *State, c *wire.Card, e *wire.Event) {
	if c.Status == wire.StatusClaimed {
		c.ClearLease()
		c.Status = wire.StatusReady
	}
	c.DeletedAt = wire.TimePtr(e.WriterClock())
	c.DeleteReason = e.Reason
}

func checkRestore(_ *State, c *wire.Card, _ *wire.Event) error {
	if c.DeletedAt == nil {
		return wire.Rule(wire.ErrConflict, "card %s is not deleted", c.ID)
	}
	return nil
}

func applyRestore(_ *State, c *wire.Card, _ *wire.Event) {
	c.DeletedAt = nil
	c.DeleteReason = ""
}

// checkDeleted refuses any op but restore (and create, which finds the id
// taken) on a deleted card.
func checkDeleted(c *wire.Card, e *wire.Event) error {
	if c == nil || c.DeletedAt == nil || e.Op == wire.OpRestore || e.Op == wire.OpCreate {
		return nil
	}
	return wire.Rule(wire.ErrNotFound, "card %s is deleted; bl restore %s brings it back", c.ID, c.ID)
}

// Dependent is a card that names another: by depends_on or a holding
// link (Type), or as its parent (Type "parent").
type Dependent struct {
	ID, Type string
}

// dependents lists the live cards that depend on id or name it as parent,
// sorted. It reads every card.
func (s *State) dependents(id string) []Dependent {
	s.all()
	var out []Dependent
	for _, c := range s.cards {
		if c.DeletedAt != nil {
			continue
		}
		c.HoldingLinks(func(t, to string) bool {
			if to == id {
				out = append(out, Dependent{c.ID, t})
			}
			return true
		})
		if c.Parent == id {
			out = append(out, Dependent{c.ID, "parent"})
		}
	}
	slices.SortFunc(out, func(a, b Dependent) int {
		return strings.Compare(a.ID+"\x00"+a.Type, b.ID+"\x00"+b.Type)
	})
	return out
}

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
func (b *Backlog) Delete(ctx context.Context, r DeleteRequest) (wire.Card, error) {
	if err := wire.ValidID(r.ID); err != nil {
		return wire.Card{}, err
	}
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), wire.OpDelete, func(s *State, _ time.Time) ([]*wire.Event, error) {
		c := s.card(r.ID)
		if c == nil {
			return nil, wire.Rule(wire.ErrNotFound, "card %s not found", r.ID)
		}
		if err := checkDeleted(c, &wire.Event{Op: wire.OpDelete}); err != nil {
			return nil, err
		}
		deps := s.dependents(r.ID)
		if len(deps) > 0 && !r.Force {
			names := make([]string, len(deps))
			for i, d := range deps {
				names[i] = d.ID + " (" + d.Type + ")"
			}
			return nil, wire.Rule(wire.ErrConflict, "%s is named by %s; --force unlinks them and deletes it", r.ID, strings.Join(names, ", "))
		}
		var evs []*wire.Event
		for _, d := range deps {
			if d.Type == "parent" {
				none := ""
				evs = append(evs, &wire.Event{Op: wire.OpUpdate, Card: d.ID, Fields: &wire.Fields{Parent: &none}})
			} else {
				evs = append(evs, &wire.Event{Op: wire.OpUnlink, Card: d.ID, To: r.ID, LinkType: wire.WireLink(d.Type)})
			}
		}
		return append(evs, &wire.Event{Op: wire.OpDelete, Card: r.ID, Reason: r.Reason}), nil
	})
	if err != nil {
		return wire.Card{}, err
	}
	return cards[len(cards)-1], nil
}

// Restore undoes the delete of a card.
func (b *Backlog) Restore(ctx context.Context, m Mutation, id string) (wire.Card, error) {
	return b.single(ctx, m, &wire.Event{Op: wire.OpRestore, Card: id})
}
