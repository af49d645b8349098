package cli

import "github.com/bl-backlog/bl/ledger"

// UnlinkCmd removes a dependency.
type UnlinkCmd struct {
	linkEnds  `embed:""`
	Type      string `default:"blocks" placeholder:"TYPE" help:"The type of the link: blocks, supersedes, duplicates, discovered-from or related."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (UnlinkCmd) Help() string {
	return `Examples:

    bl unlink A2 A1
    bl unlink --from A2 --to A1
    bl unlink --from A9 --to A7 --type duplicates` + exitCodesHelp
}

func (c *UnlinkCmd) Run(a *App) error {
	from, to, err := c.ends(a, "unlink")
	if err != nil {
		return err
	}
	return a.unlink(from, to, c.Type, c.RequestID)
}

// unlink removes a link (bl unlink, bl dep rm) and prints the card.
func (a *App) unlink(from, to, typ, requestID string) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.UnlinkTyped(a.ctx, ledger.LinkRequest{Mutation: a.Mutation(requestID), From: from, To: to, Type: typ})
	if err != nil {
		return err
	}
	return a.emitCard(card, "unlinked")
}
