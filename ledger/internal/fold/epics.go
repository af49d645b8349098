package fold

import (
	"fmt"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// trackChildren keeps the parents' counts of open children after an event
// changed c, which had parent and counted as open (or not) before it.
func (s *State) trackChildren(c *wire.Card, parent string, open bool) {
	if c.Parent == parent && c.OpenChild() == open {
		return
	}
	if open && parent != "" {
		if p := s.Find(parent); p != nil && p.OpenChildren > 0 {
			p.OpenChildren--
		}
	}
	if c.Parent != "" && c.OpenChild() {
		if p := s.Find(c.Parent); p != nil {
			p.OpenChildren++
		}
	}
}

// RecountChildren derives every card's count of open children from the
// cards: for a snapshot written before the fold kept it (format v2).
func (s *State) RecountChildren() {
	for _, c := range s.mem() {
		c.OpenChildren = 0
	}
	for _, c := range s.mem() {
		if c.Parent != "" && c.OpenChild() {
			if p := s.mem()[c.Parent]; p != nil {
				p.OpenChildren++
			}
		}
	}
}

// epicWaits reports why c, an epic with open children, is not claimable,
// or nil.
func (s *State) epicWaits(c *wire.Card) error {
	if s.claimEpics || c.OpenChildren == 0 {
		return nil
	}
	return wire.Rule(wire.ErrConflict, "card %s waits on %d open %s", c.ID, c.OpenChildren, plural(c.OpenChildren, "child", "children"))
}

// selectable is claimable plus the rules of selection (epicWaits): what
// claim, ready and list apply, where the fold applies claimable alone.
func (s *State) Selectable(c *wire.Card, now time.Time, owner string) error {
	if c.DeletedAt != nil {
		return CheckDeleted(c, &wire.Event{Op: wire.OpClaim})
	}
	if err := s.claimable(c, now, owner); err != nil {
		return err
	}
	return s.epicWaits(c)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Children returns copies of the cards naming id as parent, deleted ones
// left out, in claim order. It reads the cards that name id, not every
// card.
func (s *State) Children(id string) []wire.Card {
	s.haveReferrers(id)
	var kids []*wire.Card
	for _, c := range s.naming(id) {
		if c.Parent == id && c.DeletedAt == nil {
			kids = append(kids, c)
		}
	}
	slices.SortFunc(kids, ClaimOrder)
	out := make([]wire.Card, len(kids))
	for i, c := range kids {
		out[i] = c.Clone()
	}
	return out
}

// EpicsConfig is the "epics" object of config.json.
type EpicsConfig struct {
	// WaitForChildren: an epic with open children is not claimable
	// (true when left out). false keeps epics claimable as any card.
	WaitForChildren *bool `json:"wait_for_children,omitempty"`
	// AutoClose: when the last open child of an epic is completed, the
	// same writer completes the epic too, as its own event by the same
	// actor.
	AutoClose bool `json:"auto_close,omitempty"`
}

// waits reports whether open children hold an epic back.
func (e EpicsConfig) Waits() bool { return e.WaitForChildren == nil || *e.WaitForChildren }

// checkAutoClose checks the completion of an epic by the completion of
// its last open child (e.To): it applies only if, where it is folded, the
// child is done, no child of the epic is open and nobody holds the epic.
// So two clones folding the same events agree, and an epic that gained a
// child or was claimed meanwhile stays open.
func checkAutoClose(s *State, c *wire.Card, e *wire.Event) error {
	if e.Owner != "" {
		return wire.Rule(wire.ErrInvalid, "the completion of %s by its last child names no owner", c.ID)
	}
	if kid := s.Find(e.To); kid == nil || kid.Parent != c.ID || kid.Status != wire.StatusDone {
		return wire.Rule(wire.ErrConflict, "%s is not a done child of %s", e.To, c.ID)
	}
	if c.OpenChildren > 0 {
		return wire.Rule(wire.ErrConflict, "epic %s still has %d open %s", c.ID, c.OpenChildren, plural(c.OpenChildren, "child", "children"))
	}
	if c.Status == wire.StatusClaimed {
		return wire.Rule(wire.ErrConflict, "epic %s is claimed by %s; its holder completes it", c.ID, c.ClaimOwner)
	}
	return nil
}

// RollUp counts an epic's children by where they stand: done, claimed,
// ready (claimable now) and the rest (waiting, blocked, expired).
type RollUp struct {
	Children int `json:"children"`
	Done     int `json:"done"`
	Claimed  int `json:"claimed"`
	Ready    int `json:"ready"`
	Other    int `json:"other"`
}

// RollUpOf counts children by their standings.
func RollUpOf(st []Standing) RollUp {
	r := RollUp{Children: len(st)}
	for _, s := range st {
		switch s.State {
		case StateDone:
			r.Done++
		case StateClaimed:
			r.Claimed++
		case StateReady:
			r.Ready++
		default:
			r.Other++
		}
	}
	return r
}

// String is the roll-up as bl show prints it: "3/5 done, 1 claimed, 1 ready".
func (r RollUp) String() string {
	s := fmt.Sprintf("%d/%d done", r.Done, r.Children)
	for _, p := range []struct {
		n    int
		name string
	}{{r.Claimed, "claimed"}, {r.Ready, "ready"}, {r.Other, "other"}} {
		if p.n > 0 {
			s += fmt.Sprintf(", %d %s", p.n, p.name)
		}
	}
	return s
}

// TreeOrder sorts cards so each follows its parent (when listed), the
// roots and each card's children in claim order, and returns each card's
// depth: what bl list --tree prints.
func TreeOrder(cards []wire.Card) (order []wire.Card, depth []int) {
	byID := make(map[string]bool, len(cards))
	for _, c := range cards {
		byID[c.ID] = true
	}
	kids := map[string][]wire.Card{}
	var roots []wire.Card
	for _, c := range cards {
		if c.Parent != "" && byID[c.Parent] && c.Parent != c.ID {
			kids[c.Parent] = append(kids[c.Parent], c)
		} else {
			roots = append(roots, c)
		}
	}
	sortCards := func(cs []wire.Card) {
		slices.SortFunc(cs, func(a, b wire.Card) int { return ClaimOrder(&a, &b) })
	}
	sortCards(roots)
	seen := map[string]bool{}
	var walk func(c wire.Card, d int)
	walk = func(c wire.Card, d int) {
		if seen[c.ID] {
			return
		}
		seen[c.ID] = true
		order, depth = append(order, c), append(depth, d)
		k := kids[c.ID]
		sortCards(k)
		for _, kc := range k {
			walk(kc, d+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	for _, c := range cards { // a parent cycle a merge let in: listed flat
		walk(c, 0)
	}
	return order, depth
}
