package cli

import "github.com/bl-backlog/bl/ledger"

// FailCmd gives a claimed card back as failed.
type FailCmd struct {
	cardID       `embed:""`
	Owner        string `help:"Lease owner (default: the actor)."`
	Epoch        int64  `help:"The epoch claim printed; a stale epoch is refused."`
	Reason       string `help:"What went wrong, for the next attempt (at most 4 KiB)."`
	RequestID    string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	remoteChoice `embed:""`
}

func (FailCmd) Help() string {
	return `Gives the card back after a failed attempt. The attempt counts toward
max_attempts: when they are used up the card is blocked with the reason;
otherwise it returns to ready but is not claimable before a retry backoff
(defer_until): 30s after the first failed attempt, doubling each time, at
most 1h. config.json sets it: "retry_backoff": {"initial": "30s", "max": "1h"};
"initial": "0s" turns it off. A lease that expires counts the same way when
it is reclaimed. Fenced like heartbeat; with --remote (or claims.remote in
config.json) it goes through that git remote, as claim does.

Examples:

    bl fail --id A1 --owner worker-1 --epoch 3 --reason "tests fail: TestX"` + exitCodesHelp
}

func (c *FailCmd) Run(a *App) error {
	return a.runLease(leaseWrite{cmd: "fail", verb: "failed", card: c.cardID, owner: c.Owner, epoch: c.Epoch,
		reason: c.Reason, requestID: c.RequestID, remote: c.remoteChoice, ownerIsActor: true, op: (*ledger.Backlog).Fail})
}

func (c *FailCmd) gitWork(a *App) string { return a.remoteWork("fail", c.remoteChoice) }
