package ledger

import (
	"context"
	"slices"
	"strings"
	"time"
)

// The link types. A link is on one card (the link's from) and points at
// another (its to). blocks, supersedes and duplicates hold the card they
// are on back while the card they point at is open (not done), as
// depends_on always has; discovered-from and related are audit only and
// never hold anything back. Read "A <type> B" for a link on A to B as:
//
//	blocks           B blocks A: A depends on B (depends_on)
//	supersedes       B supersedes A: A waits, or is closed, for B
//	duplicates       A is a duplicate of B
//	discovered-from  A was discovered while working on B
//	related          A and B are related
const (
	LinkBlocks         = "blocks"
	LinkSupersedes     = "supersedes"
	LinkDuplicates     = "duplicates"
	LinkDiscoveredFrom = "discovered-from"
	LinkRelated        = "related"
)

// LinkTypes lists the link types, the holding ones first.
var LinkTypes = []string{LinkBlocks, LinkSupersedes, LinkDuplicates, LinkDiscoveredFrom, LinkRelated}

// Link is a typed link other than blocks on a card: blocks links are the
// card's depends_on.
type Link struct {
	Type string `json:"type"`
	To   string `json:"to"`
}

// LinkHolds reports whether a link of type t holds the card it is on back
// while its other end is open.
func LinkHolds(t string) bool {
	return t == LinkBlocks || t == "" || t == LinkSupersedes || t == LinkDuplicates
}

// ValidLinkType reports why t is not a link type, or nil.
func ValidLinkType(t string) error {
	if t == "" || slices.Contains(LinkTypes, t) {
		return nil
	}
	return rule(ErrInvalid, "unknown link type %q: use %s", t, strings.Join(LinkTypes, ", "))
}

// LinkPhrase says what a link of type t is, seen from the card it is on
// (out) or from the card it points at: "blocked by" / "blocks",
// "duplicate of" / "duplicated by".
func LinkPhrase(t string, out bool) string {
	type pair struct{ out, in string }
	p := map[string]pair{
		LinkBlocks:         {"blocked by", "blocks"},
		LinkSupersedes:     {"superseded by", "supersedes"},
		LinkDuplicates:     {"duplicate of", "duplicated by"},
		LinkDiscoveredFrom: {"discovered from", "led to"},
		LinkRelated:        {"related to", "related to"},
	}[canonLink(t)]
	if out {
		return p.out
	}
	return p.in
}

// canonLink is t with the empty type (a link event from before types)
// read as blocks.
func canonLink(t string) string {
	if t == "" {
		return LinkBlocks
	}
	return t
}

// AllLinks lists every outgoing link of c, blocks (its depends_on) first.
func (c *Card) AllLinks() []Link {
	out := make([]Link, 0, len(c.DependsOn)+len(c.Links))
	for _, d := range c.DependsOn {
		out = append(out, Link{Type: LinkBlocks, To: d})
	}
	return append(out, c.Links...)
}

// hasLink reports whether c has a link of type t to to.
func (c *Card) hasLink(t, to string) bool {
	if t = canonLink(t); t == LinkBlocks {
		return slices.Contains(c.DependsOn, to)
	}
	return slices.Contains(c.Links, Link{Type: t, To: to})
}

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

// holdingLinks calls fn with the other end of each link holding c back
// (depends_on, then supersedes and duplicates links), until fn returns
// false.
func (c *Card) holdingLinks(fn func(t, to string) bool) {
	for _, d := range c.DependsOn {
		if !fn(LinkBlocks, d) {
			return
		}
	}
	for _, l := range c.Links {
		if LinkHolds(l.Type) && !fn(l.Type, l.To) {
			return
		}
	}
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
	return b.single(ctx, r.Mutation, &Event{Op: OpLink, Card: r.From, To: r.To, LinkType: wireLink(r.Type)})
}

// UnlinkTyped removes the link of r.Type from r.From to r.To.
func (b *Backlog) UnlinkTyped(ctx context.Context, r LinkRequest) (Card, error) {
	if err := linkArgs(r); err != nil {
		return Card{}, err
	}
	return b.single(ctx, r.Mutation, &Event{Op: OpUnlink, Card: r.From, To: r.To, LinkType: wireLink(r.Type)})
}

func linkArgs(r LinkRequest) error {
	if err := ValidID(r.To); err != nil {
		return err
	}
	return ValidLinkType(r.Type)
}

// wireLink is how an event carries link type t: blocks as no type, so a
// blocks link reads in every version.
func wireLink(t string) string {
	if t == LinkBlocks {
		return ""
	}
	return t
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

// LinksTo is State.LinksTo on the current state.
func (b *Backlog) LinksTo(id string) (in []Link, err error) {
	err = b.View(func(s *State, _ time.Time) error {
		in = s.LinksTo(id)
		return nil
	})
	return in, err
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
	cards, err := b.completeRollingUp(ctx, r.Mutation.names(r.ID, nil), func(s *State, _ time.Time) ([]*Event, error) {
		var evs []*Event
		if c := s.card(r.ID); c == nil || !c.hasLink(typ, other) {
			evs = append(evs, &Event{Op: OpLink, Card: r.ID, To: other, LinkType: wireLink(typ)})
		}
		return append(evs, &Event{Op: OpComplete, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason}), nil
	})
	if err != nil {
		return Card{}, err
	}
	return cards[len(cards)-1], nil
}
