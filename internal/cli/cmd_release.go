package cli

import "github.com/bl-backlog/bl/ledger"

// ReleaseCmd gives a claimed card back.
type ReleaseCmd struct {
	cardID       `embed:""`
	Owner        string `help:"Lease owner (default: the actor)."`
	Epoch        int64  `help:"The epoch claim printed; a stale epoch is refused."`
	Reason       string `help:"Why, for the history."`
	RequestID    string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	remoteChoice `embed:""`
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
	return a.runLease(leaseWrite{cmd: "release", verb: "released", card: c.cardID, owner: c.Owner, epoch: c.Epoch,
		reason: c.Reason, requestID: c.RequestID, remote: c.remoteChoice, ownerIsActor: true, op: (*ledger.Backlog).Release})
}

func (c *ReleaseCmd) gitWork(a *App) string { return a.remoteWork("release", c.remoteChoice) }
