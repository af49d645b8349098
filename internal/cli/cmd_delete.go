package cli

import "github.com/bl-backlog/bl/ledger"

// DeleteCmd writes a tombstone for a card.
type DeleteCmd struct {
	cardID    `embed:""`
	Reason    string `help:"Why it goes, kept with it."`
	Force     bool   `help:"Delete a card others depend on (or name as parent), unlinking them in the same write."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (DeleteCmd) Help() string {
	return `The card leaves lists, the ready queue, boards and exports; its history
stays in bl log, and bl show ID still shows it, marked deleted. A lease
on it ends (its holder is fenced). A card that others depend on, or name
as parent, is refused (exit code 4) unless --force, which unlinks them in
the same write.

Examples:

    bl delete A7 --reason "filed twice"
    bl rm A7 --force
    bl restore A7` + exitCodesHelp
}

func (c *DeleteCmd) Run(a *App) error {
	id, err := c.id(a, "delete")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Delete(a.ctx, ledger.DeleteRequest{Mutation: a.Mutation(c.RequestID), ID: id, Reason: c.Reason, Force: c.Force})
	if err != nil {
		return err
	}
	return a.emitCard(card, "deleted")
}
