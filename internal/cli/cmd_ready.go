package cli

import (
	"github.com/bl-backlog/bl/ledger"
)

// ReadyCmd lists claimable cards in claim order.
type ReadyCmd struct {
	Phase string `help:"Only this phase."`
	Label string `help:"Only cards with this label."`
	Limit int    `help:"At most this many (0 = all)."`
	Owner string `help:"Whose claim to list for (default: the actor): cards assigned to anyone else are left out."`
	Any   bool   `help:"Also the cards assigned to someone else."`
	Mine  bool   `help:"Only the cards assigned to the owner."`
}

func (ReadyCmd) Help() string {
	return `The cards a claim would take, best first: priority (higher first), then
oldest, then id. A card is claimable when it is ready (or claimed with an
expired lease), every card it depends on is done, and its defer time has
passed. A card whose paths (bl create --paths) overlap the paths of a card
claimed or in review is listed too, as waiting, with DETAIL "paths held by
A7": claim passes over it until A7 lets go.

Cards assigned to someone else (bl assign) are left out, as a plain claim
passes them over: --owner says whose view it is (default: the actor),
--any lists them too, --mine lists only the owner's.

Examples:

    bl ready --limit 10
    bl ready --phase M1 --json
    bl ready --owner bob --mine
    bl ready --any` + exitCodesHelp
}

func (c *ReadyCmd) Run(a *App) error {
	b, err := a.openChecked(notNegative("limit", c.Limit))
	if err != nil {
		return err
	}
	if c.Any && c.Mine {
		return usagef("--any and --mine do not combine: pick one")
	}
	f := ledger.ClaimRequest{Owner: a.Owner(c.Owner), Phase: c.Phase, Label: c.Label, AnyAssignee: c.Any, Mine: c.Mine}.Filter()
	f.Limit = c.Limit
	cards, err := b.Ready(f)
	if err != nil {
		return err
	}
	return a.emitCards(cards)
}
