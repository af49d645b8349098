package cli

import "github.com/bl-backlog/bl/ledger"

// ReleaseCmd gives a claimed card back.
type ReleaseCmd struct {
	cardID    `embed:""`
	Owner     string `help:"Lease owner (default: the actor)."`
	Epoch     int64  `help:"The epoch claim printed; a stale epoch is refused."`
	Reason    string `help:"Why, for the history."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	Remote    string `placeholder:"NAME" help:"Go through this git remote (default: claims.remote in config.json): acknowledged once pushed."`
}

func (ReleaseCmd) Help() string {
	return `Returns the card to ready for someone else (to blocked when its
max-attempts are used up). Fenced like heartbeat. With --remote (or
claims.remote in config.json) it goes through that git remote, as claim
does, and is acknowledged once pushed.

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
	req := ledger.LeaseRequest{Mutation: a.Mutation(c.RequestID), ID: id, Owner: a.Owner(c.Owner), Epoch: c.Epoch, Reason: c.Reason}
	card, err := a.ownerWrite(b, "release", c.Remote, c.RequestID, func(rid string) (ledger.Card, error) {
		req.RequestID = rid
		return b.Release(a.ctx, req)
	})
	if err != nil {
		return a.noOwnerGiven(b, c.Owner, id, err)
	}
	return a.emitCard(card, "released")
}

func (c *ReleaseCmd) gitWork(a *App) string { return a.remoteWork("release", c.Remote) }
