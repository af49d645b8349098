package wire

import (
	"slices"
	"strings"
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
	return Rule(ErrInvalid, "unknown link type %q: use %s", t, strings.Join(LinkTypes, ", "))
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

// HasLink reports whether c has a link of type t to to.
func (c *Card) HasLink(t, to string) bool {
	if t = canonLink(t); t == LinkBlocks {
		return slices.Contains(c.DependsOn, to)
	}
	return slices.Contains(c.Links, Link{Type: t, To: to})
}

// HoldingLinks calls fn with the other end of each link holding c back
// (depends_on, then supersedes and duplicates links), until fn returns
// false.
func (c *Card) HoldingLinks(fn func(t, to string) bool) {
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

// WireLink is how an event carries link type t: blocks as no type, so a
// blocks link reads in every version.
func WireLink(t string) string {
	if t == LinkBlocks {
		return ""
	}
	return t
}
