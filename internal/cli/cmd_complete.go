package cli

import (
	"context"
	"fmt"
	"strings"

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
	Review       bool   `help:"Send the card to review instead of done (also when config.json sets review.required); bl approve or bl reject decides it."`
	Commit       string `placeholder:"SHA" help:"Record the commit that holds the work."`
	Branch       string `placeholder:"NAME" help:"Record the branch that holds the work."`
	RequestID    string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	remoteChoice `embed:""`
}

func (CompleteCmd) Help() string {
	return `Agents pass --owner and --epoch so a late agent cannot complete a card that
was taken over. Without them the completion is not fenced (a person
closing a card by hand).

Examples:

    bl complete --id A1 --owner worker-1 --epoch 3 --note "merged in 4f2a9c1"
    bl complete --id A1
    bl close A9 --duplicate-of A7
    bl complete --id A1 --owner worker-1 --epoch 3 --review --branch bl/A1 --commit 4f2a9c1

--duplicate-of X and --superseded-by X record the link (duplicates,
supersedes) and the completion in one write, so the ready queue never
offers both cards. With epics.auto_close in config.json, completing an
epic's last open child completes the epic too, in an event of its own.

With --review (or review.required: true in config.json) the card goes to
review: the lease ends, note, commit and branch are recorded, and cards
that depend on it still wait until a reviewer runs bl approve.` + exitCodesHelp
}

func (c *CompleteCmd) Run(a *App) error {
	for name, v := range map[string]string{"commit": c.Commit, "branch": c.Branch} {
		if len(v) > ledger.MaxRefLen || strings.ContainsAny(v, "\x00\n\r") {
			return usagef(fmt.Sprintf("--%s must be one line of at most %d bytes", name, ledger.MaxRefLen))
		}
	}
	review := c.Review
	if !review {
		if b, err := a.Open(); err == nil && b.Config().Review.Required {
			review = true
		}
	}
	finish := closeAsLink("", "")
	for _, other := range []*string{&c.DuplicateOf, &c.SupersededBy} {
		if *other != "" {
			id, err := a.cardNamed(*other)
			if err != nil {
				return err
			}
			*other = id
		}
	}
	switch {
	case c.DuplicateOf != "" && c.SupersededBy != "":
		return usagef("--duplicate-of and --superseded-by: give one")
	case (c.DuplicateOf != "" || c.SupersededBy != "") && review:
		return usagef("--duplicate-of and --superseded-by close the card: they do not go with --review")
	case c.DuplicateOf != "":
		finish = closeAsLink(ledger.LinkDuplicates, c.DuplicateOf)
	case c.SupersededBy != "":
		finish = closeAsLink(ledger.LinkSupersedes, c.SupersededBy)
	}
	verb := "completed"
	if review {
		verb = "sent to review"
	}
	return a.runLease(leaseWrite{cmd: "complete", verb: verb, card: c.cardID, owner: c.Owner, epoch: c.Epoch,
		reason: c.Note, requestID: c.RequestID, remote: c.remoteChoice,
		op: func(b *ledger.Backlog, ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error) {
			r.Commit, r.Branch = c.Commit, c.Branch
			if review {
				return b.Submit(ctx, r)
			}
			return finish(b, ctx, r)
		},
		before: func(b *ledger.Backlog, id, owner string) error { return a.preComplete(b, id, owner, c.Epoch, c.Note) }})
}

func (c *CompleteCmd) gitWork(a *App) string { return a.remoteWork("complete", c.remoteChoice) }

// closeAsLink is a completion that records a link of type typ to other
// first; with no type, a plain completion.
func closeAsLink(typ, other string) func(*ledger.Backlog, context.Context, ledger.LeaseRequest) (ledger.Card, error) {
	return func(b *ledger.Backlog, ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error) {
		if typ == "" {
			return b.Complete(ctx, r)
		}
		return b.CloseAs(ctx, r, typ, other)
	}
}
