package cli

import "github.com/bl-backlog/bl/ledger"

// UnlinkCmd removes a dependency.
type UnlinkCmd struct {
	From      string `required:"" placeholder:"ID" help:"The card that waits."`
	To        string `required:"" placeholder:"ID" help:"The card it no longer waits for."`
	Type      string `default:"blocks" placeholder:"TYPE" help:"The type of the link: blocks, supersedes, duplicates, discovered-from or related."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (UnlinkCmd) Help() string {
	return `Examples:

    bl unlink --from A2 --to A1
    bl unlink --from A9 --to A7 --type duplicates` + exitCodesHelp
}

func (c *UnlinkCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.UnlinkTyped(a.ctx, ledger.LinkRequest{Mutation: a.Mutation(c.RequestID), From: c.From, To: c.To, Type: c.Type})
	if err != nil {
		return err
	}
	return a.emitCard(card, "unlinked")
}
