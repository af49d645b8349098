package cli

import "github.com/bl-backlog/bl/ledger"

// CompleteCmd marks a card done.
type CompleteCmd struct {
	cardID       `embed:""`
	Owner        string `help:"Lease owner; when given (or with --epoch) the call is fenced like heartbeat."`
	Epoch        int64  `help:"The epoch claim printed; a stale epoch is refused."`
	Note         string `help:"Closing note, e.g. the commit that did it."`
	RequestID    string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	remoteChoice `embed:""`
}

func init() {
	register(command{name: "complete", rank: 150, help: "Mark a card done.", new: func() any { return &CompleteCmd{} }})
}

func (CompleteCmd) Help() string {
	return `Agents pass --owner and --epoch so a late agent cannot complete a card that
was taken over. Without them the completion is not fenced (a person
closing a card by hand).

Examples:

    bl complete --id A1 --owner worker-1 --epoch 3 --note "merged in 4f2a9c1"
    bl complete --id A1` + exitCodesHelp
}

func (c *CompleteCmd) Run(a *App) error {
	return a.runLease(leaseWrite{cmd: "complete", verb: "completed", card: c.cardID, owner: c.Owner, epoch: c.Epoch,
		reason: c.Note, requestID: c.RequestID, remote: c.remoteChoice, op: (*ledger.Backlog).Complete,
		before: func(b *ledger.Backlog, id, owner string) error { return a.preComplete(b, id, owner, c.Epoch, c.Note) }})
}

func (c *CompleteCmd) gitWork(a *App) string { return a.remoteWork("complete", c.remoteChoice) }
