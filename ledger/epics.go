package ledger

import (
	"context"
	"fmt"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"slices"
	"time"
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

// trackChildren keeps the parents' counts of open children after an event
// changed c, which had parent and counted as open (or not) before it.
func (s *State) trackChildren(c *wire.Card, parent string, open bool) {
	if c.Parent == parent && c.OpenChild() == open {
		return
	}
	if open && parent != "" {
		if p := s.card(parent); p != nil && p.OpenChildren > 0 {
			p.OpenChildren--
		}
	}
	if c.Parent != "" && c.OpenChild() {
		if p := s.card(c.Parent); p != nil {
			p.OpenChildren++
		}
	}
}

// recountChildren derives every card's count of open children from the
// cards: for a snapshot written before the fold kept it (format v2).
func (s *State) recountChildren() {
	for _, c := range s.cards {
		c.OpenChildren = 0
	}
	for _, c := range s.cards {
		if c.Parent != "" && c.OpenChild() {
			if p := s.cards[c.Parent]; p != nil {
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
func (s *State) selectable(c *wire.Card, now time.Time, owner string) error {
	if c.DeletedAt != nil {
		return checkDeleted(c, &wire.Event{Op: wire.OpClaim})
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
// left out, in claim order. It reads every card.
func (s *State) Children(id string) []wire.Card {
	s.all()
	var kids []*wire.Card
	for _, c := range s.cards {
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

// Children is State.Children on the current state.
func (b *Backlog) Children(id string) (kids []wire.Card, err error) {
	err = b.View(func(s *State, _ time.Time) error {
		kids = s.Children(id)
		return nil
	})
	return kids, err
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
func (e EpicsConfig) waits() bool { return e.WaitForChildren == nil || *e.WaitForChildren }

// policy gives the state the rules of selection config.json sets.
func (b *Backlog) policy() {
	if b.state != nil {
		b.state.claimEpics = !b.cfg.Epics.waits()
	}
}

// checkAutoClose checks the completion of an epic by the completion of
// its last open child (e.To): it applies only if, where it is folded, the
// child is done, no child of the epic is open and nobody holds the epic.
// So two clones folding the same events agree, and an epic that gained a
// child or was claimed meanwhile stays open.
func checkAutoClose(s *State, c *wire.Card, e *wire.Event) error {
	if e.Owner != "" {
		return wire.Rule(wire.ErrInvalid, "the completion of %s by its last child names no owner", c.ID)
	}
	if kid := s.card(e.To); kid == nil || kid.Parent != c.ID || kid.Status != wire.StatusDone {
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

// rollUp completes, under the lock, the epics whose last open child the
// write just completed (done holds the cards it left), when config.json
// sets epics.auto_close: each is its own event by the same actor, written
// after the child's, and an epic so completed may close its own parent.
// A rule that no longer holds by then leaves the epic open, claimable for
// its own closing work; a failure is a warning, the child's completion
// stands.
func (b *Backlog) rollUp(m Mutation, done []wire.Card) {
	if !b.cfg.Epics.AutoClose {
		return
	}
	for _, kid := range done {
		for kid.Status == wire.StatusDone && kid.Parent != "" {
			if _, err := b.state.readCard(kid.Parent); err != nil {
				b.warn(fmt.Sprintf("epic %s was not completed with its last child %s: %v", kid.Parent, kid.ID, err))
				break
			}
			p := b.state.card(kid.Parent)
			if p == nil || p.Status == wire.StatusDone || p.Status == wire.StatusClaimed || p.DeletedAt != nil || p.OpenChildren != 0 {
				break
			}
			e := &wire.Event{Op: wire.OpComplete, Card: p.ID, To: kid.ID, Reason: fmt.Sprintf("all children done (last: %s)", kid.ID)}
			cards, err := b.writeLocked(Mutation{Actor: m.Actor}, wire.OpComplete, func(*State, time.Time) ([]*wire.Event, error) { return []*wire.Event{e}, nil })
			if err != nil || len(cards) == 0 {
				b.warn(fmt.Sprintf("epic %s was not completed with its last child %s: %v", p.ID, kid.ID, err))
				break
			}
			kid = cards[0]
		}
	}
}

// completeRollingUp appends the events build returns, then rolls up the
// epics they finished (rollUp), all under one hold of the lock.
func (b *Backlog) completeRollingUp(ctx context.Context, m Mutation, build func(s *State, at time.Time) ([]*wire.Event, error)) (cards []wire.Card, err error) {
	if m.Actor == "" {
		return nil, wire.Rule(wire.ErrInvalid, "an actor is required")
	}
	err = b.withLock(ctx, func() error {
		if err := b.readRequest(m.RequestID); err != nil {
			return err
		}
		cards, err = b.writeLocked(m, wire.OpComplete, resolved(build))
		if err == nil {
			b.rollUp(m, cards)
		}
		return err
	})
	return cards, err
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
