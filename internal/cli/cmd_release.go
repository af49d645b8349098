package cli

import "github.com/bl-backlog/bl/ledger"

// ReleaseCmd gives a claimed card back.
type ReleaseCmd struct {
	cardID    `embed:""`
	Owner     string `help:"Lease owner (default: the actor)."`
	Epoch     int64  `help:"The epoch claim printed; a stale epoch is refused."`
	Reason    string `help:"Why, for the history."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (ReleaseCmd) Help() string {
	return `Returns the card to ready for someone else (to blocked when its
max-attempts are used up). Fenced like heartbeat.

Examples:

    bl release --id A1 --owner worker-1 --epoch 3 --reason "needs a human"` + exitCodesHelp
}

func (c *ReleaseCmd) Run(a *App) error {
	id, err := c.id("release")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Release(a.ctx, ledger.LeaseRequest{Mutation: a.Mutation(c.RequestID), ID: id, Owner: a.Owner(c.Owner), Epoch: c.Epoch, Reason: c.Reason})
	if err != nil {
		return a.noOwnerGiven(b, c.Owner, id, err)
	}
	return a.emitCard(card, "released")
}
