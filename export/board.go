package export

import (
	"fmt"

	"github.com/bl-backlog/bl/ledger"
)

// board is the model the html and markdown boards share: the cards in
// board order, grouped into lanes and phases, each card with what the
// boards say of it (cardView). The writers only choose how it looks, so
// the two boards cannot drift apart on what they show.
type board struct {
	o         Options
	cards     []ledger.Card // sorted
	byID      map[string]*ledger.Card
	needs     map[string][]string
	kids      map[string][]*ledger.Card
	anchors   anchors
	conflicts map[string][]ledger.Conflict
}

func newBoard(cards []ledger.Card, o Options) *board {
	cards = sorted(cards)
	return &board{
		o:         o,
		cards:     cards,
		byID:      index(cards),
		needs:     dependents(cards),
		kids:      childrenOf(cards),
		anchors:   newAnchors(cards),
		conflicts: o.byCard(),
	}
}

// lane is one status column of a board.
type lane struct {
	status ledger.Status
	cards  int
	phases []phase // in board order; none when the lane is empty
}

// phase is one phase's cards within a lane, children under their epic.
type phase struct {
	name  string // "" for cards without a phase
	cards []cardView
}

// lanes returns every lane of the board, empty ones too.
func (bd *board) lanes() []lane {
	var out []lane
	for _, s := range bd.o.lanes() {
		var in []ledger.Card
		for _, c := range bd.cards {
			if c.Status == s {
				in = append(in, c)
			}
		}
		l := lane{status: s, cards: len(in)}
		phases, byPhase := phaseGroups(in)
		for _, p := range phases {
			order, depth := ledger.TreeOrder(byPhase[p]) // children under their epic
			ph := phase{name: p}
			for i := range order {
				ph.cards = append(ph.cards, bd.view(&order[i], depth[i]))
			}
			l.phases = append(l.phases, ph)
		}
		out = append(out, l)
	}
	return out
}

// ref is a card another card names; card is nil when it is not on the
// board.
type ref struct {
	id     string
	card   *ledger.Card
	anchor string
}

func (bd *board) ref(id string) ref { return ref{id: id, card: bd.byID[id], anchor: bd.anchors.of(id)} }

func (bd *board) refs(ids []string) []ref {
	var out []ref
	for _, id := range ids {
		out = append(out, bd.ref(id))
	}
	return out
}

// cardView is one card as both boards show it: its own fields, plus the
// facts that need the rest of the board or the options.
type cardView struct {
	*ledger.Card
	anchor    string
	depth     int      // how far under its epic
	epic      string   // epicFact; "" for a card without children
	expired   bool     // its lease ran out (only with a clock in the options)
	waiting   []ref    // a ready card's dependencies that are not done
	work      []string // workFacts
	attempts  string   // "attempts 1 of 3"; "" when there are none
	deferred  string   // the defer time, while not done
	parent    *ref
	dependsOn []ref
	neededBy  []ref
	conflicts []ledger.Conflict
}

func (bd *board) view(c *ledger.Card, depth int) cardView {
	v := cardView{
		Card:      c,
		anchor:    bd.anchors.of(c.ID),
		depth:     depth,
		epic:      epicFact(c, bd.kids),
		expired:   !bd.o.Now.IsZero() && c.Expired(bd.o.Now),
		work:      workFacts(c),
		dependsOn: bd.refs(uniq(c.DependsOn)),
		neededBy:  bd.refs(bd.needs[c.ID]),
		conflicts: bd.conflicts[c.ID],
	}
	if c.Status == ledger.StatusReady {
		v.waiting = bd.refs(bd.o.WaitingOn[c.ID])
	}
	if c.Attempts > 0 || c.MaxAttempts > 0 {
		v.attempts = fmt.Sprintf("attempts %d", c.Attempts)
		if c.MaxAttempts > 0 {
			v.attempts += fmt.Sprintf(" of %d", c.MaxAttempts)
		}
	}
	if c.Status != ledger.StatusDone {
		v.deferred = stamp(c.DeferUntil)
	}
	if c.Parent != "" {
		p := bd.ref(c.Parent)
		v.parent = &p
	}
	return v
}
