package fold

import (
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"slices"
	"strings"
)

// checkTypedLink is checkLink for the types other than blocks.
func checkTypedLink(s *State, c *wire.Card, e *wire.Event) error {
	t := e.LinkType
	if err := wire.ValidLinkType(t); err != nil {
		return err
	}
	if e.To == c.ID {
		return wire.Rule(wire.ErrInvalid, "card %s cannot be %s itself", c.ID, wire.LinkPhrase(t, true))
	}
	if s.liveCard(e.To) == nil {
		return wire.Rule(wire.ErrNotFound, "card %s not found", e.To)
	}
	if c.HasLink(t, e.To) {
		return wire.Rule(wire.ErrConflict, "%s is already %s %s", c.ID, wire.LinkPhrase(t, true), e.To)
	}
	if len(c.Links) >= wire.MaxListEntries {
		return wire.Rule(wire.ErrInvalid, "%s already has %d typed links", c.ID, wire.MaxListEntries)
	}
	if wire.LinkHolds(t) {
		if cycle := s.depCycle(c.ID, e.To); cycle != nil {
			return wire.Rule(wire.ErrConflict, "%s %s %s would make a cycle: %s", c.ID, wire.LinkPhrase(t, true), e.To, strings.Join(cycle, " → "))
		}
	}
	return nil
}

func checkTypedUnlink(_ *State, c *wire.Card, e *wire.Event) error {
	if err := wire.ValidLinkType(e.LinkType); err != nil {
		return err
	}
	if !c.HasLink(e.LinkType, e.To) {
		return wire.Rule(wire.ErrConflict, "%s is not %s %s", c.ID, wire.LinkPhrase(e.LinkType, true), e.To)
	}
	return nil
}

// liveCard is the card with the given id unless there is none or it is
// deleted: what a new link, parent or dependency may name.
func (s *State) liveCard(id string) *wire.Card {
	if c := s.Find(id); c != nil && c.DeletedAt == nil {
		return c
	}
	return nil
}

// LinksTo returns the links other cards have to id, as links seen from
// id: {type, to: the card they are on}, sorted by type order, then id.
// It reads the cards that name id, not every card.
func (s *State) LinksTo(id string) []wire.Link {
	s.haveReferrers(id)
	var in []wire.Link
	for _, c := range s.naming(id) {
		if c.DeletedAt != nil || c.ID == id {
			continue
		}
		for _, l := range c.AllLinks() {
			if l.To == id {
				in = append(in, wire.Link{Type: l.Type, To: c.ID})
			}
		}
	}
	slices.SortFunc(in, func(a, b wire.Link) int {
		if d := slices.Index(wire.LinkTypes, a.Type) - slices.Index(wire.LinkTypes, b.Type); d != 0 {
			return d
		}
		return strings.Compare(a.To, b.To)
	})
	return in
}

// typedLinksHold is the readiness rule of the typed links: a supersedes
// or duplicates link holds c back while its other end is not done.
func (s *State) typedLinksHold(c *wire.Card) error {
	for _, l := range c.Links {
		if !wire.LinkHolds(l.Type) {
			continue
		}
		if dc := s.Find(l.To); dc == nil || dc.Status != wire.StatusDone {
			st := wire.Status("missing")
			if dc != nil {
				st = dc.Status
			}
			return wire.Rule(wire.ErrConflict, "card %s is %s %s (%s)", c.ID, wire.LinkPhrase(l.Type, true), l.To, st)
		}
	}
	return nil
}
