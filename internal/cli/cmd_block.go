package cli

import "github.com/bl-backlog/bl/ledger"

// BlockCmd parks a card.
type BlockCmd struct {
	cardID       `embed:""`
	Reason       string `help:"Why it is blocked."`
	Owner        string `help:"Lease owner; when given (or with --epoch) the call is fenced like heartbeat."`
	Epoch        int64  `help:"The epoch claim printed."`
	RequestID    string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	remoteChoice `embed:""`
}

func (BlockCmd) Help() string {
	return `A blocked card is never claimed until bl unblock. Blocking a claimed card
drops its lease. With --remote (or claims.remote in config.json) it goes
through that git remote, as claim does, and is acknowledged once pushed.

Examples:

    bl block --id A3 --reason "waiting for the vendor's API key"` + exitCodesHelp
}

func (c *BlockCmd) Run(a *App) error {
	return a.runLease(leaseWrite{cmd: "block", verb: "blocked", card: c.cardID, owner: c.Owner, epoch: c.Epoch,
		reason: c.Reason, requestID: c.RequestID, remote: c.remoteChoice, op: (*ledger.Backlog).Block})
}

func (c *BlockCmd) gitWork(a *App) string { return a.remoteWork("block", c.remoteChoice) }
