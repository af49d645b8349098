package cli

import (
	"context"

	"github.com/bl-backlog/bl/ledger"
)

// CompleteCmd marks a card done.
type CompleteCmd struct {
	cardID       `embed:""`
	Owner        string `help:"Lease owner; when given (or with --epoch) the call is fenced like heartbeat."`
	Epoch        int64  `help:"The epoch claim printed; a stale epoch is refused."`
	Note         string `help:"Closing note, e.g. the commit that did it."`
	DuplicateOf  string `name:"duplicate-of" placeholder:"ID" help:"Close it as a duplicate of this card (a duplicates link, recorded with the completion)."`
	SupersededBy string `name:"superseded-by" placeholder:"ID" help:"Close it as superseded by this card (a supersedes link, recorded with the completion)."`
	RequestID    string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	remoteChoice `embed:""`
}

func init() {
	register(command{name: "complete", rank: 150, help: "Mark a card done.", aliases: []string{"close"}, new: func() any { return &CompleteCmd{} }})
}

func (CompleteCmd) Help() string {
	return `Agents pass --owner and --epoch so a late agent cannot complete a card that
was taken over. Without them the completion is not fenced (a person
closing a card by hand).

Examples:

    bl complete --id A1 --owner worker-1 --epoch 3 --note "merged in 4f2a9c1"
    bl complete --id A1
    bl close A9 --duplicate-of A7

--duplicate-of X and --superseded-by X record the link (duplicates,
supersedes) and the completion in one write, so the ready queue never
offers both cards. With epics.auto_close in config.json, completing an
epic's last open child completes the epic too, in an event of its own.` + exitCodesHelp
}

func (c *CompleteCmd) Run(a *App) error {
	op := (*ledger.Backlog).Complete
	switch {
	case c.DuplicateOf != "" && c.SupersededBy != "":
		return usagef("--duplicate-of and --superseded-by: give one")
	case c.DuplicateOf != "":
		op = closeAs(ledger.LinkDuplicates, c.DuplicateOf)
	case c.SupersededBy != "":
		op = closeAs(ledger.LinkSupersedes, c.SupersededBy)
	}
	return a.runLease(leaseWrite{cmd: "complete", verb: "completed", card: c.cardID, owner: c.Owner, epoch: c.Epoch,
		reason: c.Note, requestID: c.RequestID, remote: c.remoteChoice, op: op,
		before: func(b *ledger.Backlog, id, owner string) error { return a.preComplete(b, id, owner, c.Epoch, c.Note) }})
}

func (c *CompleteCmd) gitWork(a *App) string { return a.remoteWork("complete", c.remoteChoice) }

// closeAs is a completion that records a link of type typ to other first.
func closeAs(typ, other string) func(*ledger.Backlog, context.Context, ledger.LeaseRequest) (ledger.Card, error) {
	return func(b *ledger.Backlog, ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error) {
		return b.CloseAs(ctx, r, typ, other)
	}
}
