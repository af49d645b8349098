package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/internal/search"
	"github.com/bl-backlog/bl/ledger"
)

// ListCmd lists cards.
type ListCmd struct {
	Status   []string `placeholder:"STATUS" help:"Only these stored statuses: ready, claimed, review, blocked, done (repeat or comma-separate)."`
	State    []string `placeholder:"STATE" help:"Only cards standing so, as the STATE column shows: ready, waiting, claimed, expired, review, blocked, done, or claimable (repeat or comma-separate)."`
	Search   string   `placeholder:"TEXT" help:"Only cards holding every word of TEXT (id, title, labels, acceptance, body, notes; any case)."`
	Phase    string   `help:"Only this phase."`
	Label    string   `help:"Only cards with this label."`
	Owner    string   `help:"Only cards claimed by this owner."`
	Assignee string   `placeholder:"WHO" help:"Only cards assigned to WHO (bl assign); - for the unassigned ones."`
	Ready    bool     `help:"Only cards claimable now (ready, deps done, not deferred)."`
	Limit    int      `help:"At most this many (0 = all)."`
	Sort     string   `default:"claim" enum:"claim,created,updated,id" help:"Order: claim (priority, age, id), created (an imported card's time in its tracker when it has one), updated or id."`
	Parent   string   `placeholder:"ID" help:"Only the children of this card."`
	Tree     bool     `help:"Show the hierarchy: each card under its parent, indented."`
}

func (ListCmd) Help() string {
	return `Examples:

    bl list
    bl list --status ready,blocked --phase M1
    bl list --state waiting,expired
    bl list --search "login bug"
    bl list --ready --json
    bl list --owner worker-1 --sort updated
    bl list --assignee bob
    bl list --tree
    bl list --parent E1` + exitCodesHelp
}

func (c *ListCmd) Run(a *App) error {
	statuses, err := parseStatuses(splitList(c.Status))
	if err != nil {
		return err
	}
	states, err := parseStates(splitList(c.State))
	if err == nil {
		err = notNegative("limit", c.Limit)
	}
	if err == nil && c.Search != "" && len(search.Words(c.Search)) == 0 {
		err = usagef("--search is empty: give the words to look for")
	}
	if err == nil && strings.Contains(c.Label, ",") {
		err = usagef(fmt.Sprintf("--label %q: list filters by one label (labels may not hold a comma); give one", c.Label))
	}
	b, err := a.openChecked(err)
	if err == nil && c.Parent != "" {
		c.Parent, err = a.cardNamed(c.Parent)
	}
	if err != nil {
		return err
	}
	f := ledger.Filter{Status: statuses, Phase: c.Phase, Label: c.Label, Owner: c.Owner, Ready: c.Ready, Limit: c.Limit, Parent: c.Parent, Assignee: c.Assignee}
	if len(states) > 0 || c.Search != "" {
		f.Limit = 0 // counted after the filters below
	}
	if a.JSON && c.Search == "" && len(states) == 0 && !c.Tree {
		// The plain JSON list is written as the cards are read, one at a
		// time: at 100k cards a list held whole, and a copy of it, cost
		// more memory than the backlog itself.
		lw := cardsWriter{w: a.Stdout}
		if err := b.ListEach(f, c.Sort, func(c *ledger.Card, st ledger.Standing) error { return lw.add(c, st, true) }); err != nil {
			return err
		}
		return lw.close()
	}
	cards, err := b.List(f, c.Sort)
	if err != nil {
		return err
	}
	if c.Search != "" {
		cards = search.Keep(cards, c.Search)
	}
	if cards, err = a.inStates(cards, states); err != nil {
		return err
	}
	if c.Limit > 0 && len(cards) > c.Limit {
		cards = cards[:c.Limit]
	}
	if c.Tree {
		order, depth := ledger.TreeOrder(cards)
		return a.emit(order, func(w io.Writer) {
			if len(order) == 0 {
				fmt.Fprintln(w, "no cards")
				return
			}
			a.tableTree(w, order, depth)
		})
	}
	return a.emitCards(cards)
}

// stateClaimable is the --state word for every card anyone may claim now
// (ready and free, or expired).
const stateClaimable = "claimable"

// states are the words --state takes: where a card stands (the STATE
// column), and claimable.
var states = []string{ledger.StateReady, ledger.StateWaiting, ledger.StateClaimed, ledger.StateExpired, ledger.StateReview, ledger.StateBlocked, ledger.StateDone, stateClaimable}

func parseStates(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		s = strings.TrimSpace(s)
		if !slices.Contains(states, s) {
			return nil, usagef(fmt.Sprintf("--state %q is not one of %s", s, strings.Join(states, ", ")))
		}
		out = append(out, s)
	}
	return out, nil
}

// inStates keeps the cards standing in any of states (all when none).
func (a *App) inStates(cards []ledger.Card, states []string) ([]ledger.Card, error) {
	if len(states) == 0 {
		return cards, nil
	}
	if err := a.stand(cards); err != nil {
		return nil, err
	}
	out := cards[:0]
	for _, c := range cards {
		st, _ := a.standingOf(c)
		if slices.Contains(states, st.State) || (st.Claimable && slices.Contains(states, stateClaimable)) {
			out = append(out, c)
		}
	}
	return out, nil
}

// emitCards prints a list: a JSON array ([] when empty) or a table.
func (a *App) emitCards(cards []ledger.Card) error {
	if cards == nil {
		cards = []ledger.Card{}
	}
	return a.emit(cards, func(w io.Writer) {
		if len(cards) == 0 {
			fmt.Fprintln(w, "no cards")
			return
		}
		a.table(w, cards)
	})
}
