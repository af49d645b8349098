package cli

import (
	"github.com/bl-backlog/bl/ledger"
)

// ReadyCmd lists claimable cards in claim order.
type ReadyCmd struct {
	Phase string `help:"Only this phase."`
	Label string `help:"Only cards with this label."`
	Limit int    `help:"At most this many (0 = all)."`
}

func (ReadyCmd) Help() string {
	return `The cards a claim would take, best first: priority (higher first), then
oldest, then id. A card is claimable when it is ready (or claimed with an
expired lease), every card it depends on is done, and its defer time has
passed. A card whose paths (bl create --paths) overlap the paths of a card
claimed or in review is listed too, as waiting, with DETAIL "paths held by
A7": claim passes over it until A7 lets go.

Examples:

    bl ready --limit 10
    bl ready --phase M1 --json` + exitCodesHelp
}

func (c *ReadyCmd) Run(a *App) error {
	b, err := a.openChecked(notNegative("limit", c.Limit))
	if err != nil {
		return err
	}
	cards, err := b.Ready(ledger.Filter{Phase: c.Phase, Label: c.Label, Limit: c.Limit})
	if err != nil {
		return err
	}
	return a.emitCards(cards)
}
