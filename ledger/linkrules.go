package ledger

import (
	"slices"
	"strings"
)

// checkTypedLink is checkLink for the types other than blocks.
func checkTypedLink(s *State, c *Card, e *Event) error {
	t := e.LinkType
	if err := ValidLinkType(t); err != nil {
		return err
	}
	if e.To == c.ID {
		return rule(ErrInvalid, "card %s cannot be %s itself", c.ID, LinkPhrase(t, true))
	}
	if s.liveCard(e.To) == nil {
		return rule(ErrNotFound, "card %s not found", e.To)
	}
	if c.hasLink(t, e.To) {
		return rule(ErrConflict, "%s is already %s %s", c.ID, LinkPhrase(t, true), e.To)
	}
	if len(c.Links) >= MaxListEntries {
		return rule(ErrInvalid, "%s already has %d typed links", c.ID, MaxListEntries)
	}
	if LinkHolds(t) {
		if cycle := s.depCycle(c.ID, e.To); cycle != nil {
			return rule(ErrConflict, "%s %s %s would make a cycle: %s", c.ID, LinkPhrase(t, true), e.To, strings.Join(cycle, " → "))
		}
	}
	return nil
}

func checkTypedUnlink(_ *State, c *Card, e *Event) error {
	if err := ValidLinkType(e.LinkType); err != nil {
		return err
	}
	if !c.hasLink(e.LinkType, e.To) {
		return rule(ErrConflict, "%s is not %s %s", c.ID, LinkPhrase(e.LinkType, true), e.To)
	}
	return nil
}

// liveCard is the card with the given id unless there is none or it is
// deleted: what a new link, parent or dependency may name.
func (s *State) liveCard(id string) *Card {
	if c := s.card(id); c != nil && c.DeletedAt == nil {
		return c
	}
	return nil
}

// LinksTo returns the links other cards have to id, as links seen from
// id: {type, to: the card they are on}, sorted by type order, then id.
// It reads every card.
func (s *State) LinksTo(id string) []Link {
	s.all()
	var in []Link
	for _, c := range s.cards {
		if c.DeletedAt != nil || c.ID == id {
			continue
		}
		for _, l := range c.AllLinks() {
			if l.To == id {
				in = append(in, Link{Type: l.Type, To: c.ID})
			}
		}
	}
	slices.SortFunc(in, func(a, b Link) int {
		if d := slices.Index(LinkTypes, a.Type) - slices.Index(LinkTypes, b.Type); d != 0 {
			return d
		}
		return strings.Compare(a.To, b.To)
	})
	return in
}

// typedLinksHold is the readiness rule of the typed links: a supersedes
// or duplicates link holds c back while its other end is not done.
func (s *State) typedLinksHold(c *Card) error {
	for _, l := range c.Links {
		if !LinkHolds(l.Type) {
			continue
		}
		if dc := s.card(l.To); dc == nil || dc.Status != StatusDone {
			st := Status("missing")
			if dc != nil {
				st = dc.Status
			}
			return rule(ErrConflict, "card %s is %s %s (%s)", c.ID, LinkPhrase(l.Type, true), l.To, st)
		}
	}
	return nil
}
