package cli

import (
	"fmt"
	"io"

	"github.com/bl-backlog/bl/ledger"
)

// ListCmd lists cards.
type ListCmd struct {
	Status []string `placeholder:"STATUS" help:"Only these statuses: ready, claimed, review, blocked, done (repeat or comma-separate)."`
	Phase  string   `help:"Only this phase."`
	Label  string   `help:"Only cards with this label."`
	Owner  string   `help:"Only cards claimed by this owner."`
	Ready  bool     `help:"Only cards claimable now (ready, deps done, not deferred)."`
	Limit  int      `help:"At most this many (0 = all)."`
	Sort   string   `default:"claim" enum:"claim,created,updated,id" help:"Order: claim (priority, age, id), created, updated or id."`
	Parent string   `placeholder:"ID" help:"Only the children of this card."`
	Tree   bool     `help:"Show the hierarchy: each card under its parent, indented."`
}

func init() {
	register(command{name: "list", rank: 40, help: "List cards.", new: func() any { return &ListCmd{} }})
}

func (ListCmd) Help() string {
	return `Examples:

    bl list
    bl list --status ready,blocked --phase M1
    bl list --ready --json
    bl list --owner worker-1 --sort updated
    bl list --tree
    bl list --parent E1` + exitCodesHelp
}

func (c *ListCmd) Run(a *App) error {
	statuses, err := parseStatuses(splitList(c.Status))
	if err != nil {
		return err
	}
	b, err := a.openChecked(notNegative("limit", c.Limit))
	if err != nil {
		return err
	}
	cards, err := b.List(ledger.Filter{Status: statuses, Phase: c.Phase, Label: c.Label, Owner: c.Owner, Ready: c.Ready, Limit: c.Limit, Parent: c.Parent}, c.Sort)
	if err != nil {
		return err
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
