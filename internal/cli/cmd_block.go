package cli

import "github.com/bl-backlog/bl/ledger"

// BlockCmd parks a card.
type BlockCmd struct {
	cardID    `embed:""`
	Reason    string `help:"Why it is blocked."`
	Owner     string `help:"Lease owner; when given (or with --epoch) the call is fenced like heartbeat."`
	Epoch     int64  `help:"The epoch claim printed."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	Remote    string `placeholder:"NAME" help:"Go through this git remote (default: claims.remote in config.json): acknowledged once pushed."`
}

func (BlockCmd) Help() string {
	return `A blocked card is never claimed until bl unblock. Blocking a claimed card
drops its lease. With --remote (or claims.remote in config.json) it goes
through that git remote, as claim does, and is acknowledged once pushed.

Examples:

    bl block --id A3 --reason "waiting for the vendor's API key"` + exitCodesHelp
}

func (c *BlockCmd) Run(a *App) error {
	id, err := c.id("block")
	if err != nil {
		return err
	}
	owner := a.fencedOwner(c.Owner, c.Epoch)
	b, err := a.Open()
	if err != nil {
		return err
	}
	req := ledger.LeaseRequest{Mutation: a.Mutation(c.RequestID), ID: id, Owner: owner, Epoch: c.Epoch, Reason: c.Reason}
	card, err := a.ownerWrite(b, "block", c.Remote, c.RequestID, func(rid string) (ledger.Card, error) {
		req.RequestID = rid
		return b.Block(a.ctx, req)
	})
	if err != nil {
		return err
	}
	return a.emitCard(card, "blocked")
}

func (c *BlockCmd) gitWork(a *App) string { return a.remoteWork("block", c.Remote) }
