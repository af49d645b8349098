package cli

import (
	"fmt"
	"io"

	"github.com/bl-backlog/bl/ledger"
)

// ReclaimCmd returns expired leases to the pool.
type ReclaimCmd struct {
	cardFilter `embed:""`
	Reason     string `help:"Why, for the history."`
	RequestID  string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (ReclaimCmd) Help() string {
	return `Without --id, every card whose lease has expired goes back to ready (or to
blocked when its max-attempts are used up). Expired cards are claimable
even before a reclaim; reclaim makes the pool visible and records it. With
--id the card's lease is taken back at once; its owner is fenced out.
Prints the cards it changed (a JSON array).

Examples:

    bl reclaim
    bl reclaim --id A1 --reason "worker-1 is gone" --json` + exitCodesHelp
}

func (c *ReclaimCmd) Run(a *App) error {
	id, err := c.id(a, "reclaim")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	cards, err := b.Reclaim(a.ctx, ledger.ReclaimRequest{Mutation: a.Mutation(c.RequestID), ID: id, Reason: c.Reason})
	if err != nil {
		return err
	}
	if cards == nil {
		cards = []ledger.Card{}
	}
	return a.emit(cards, func(w io.Writer) {
		if len(cards) == 0 {
			fmt.Fprintln(w, "no expired leases")
		}
		for _, card := range cards {
			fmt.Fprintf(w, "reclaimed %s\n", a.cardLine(card))
		}
	})
}
