package cli

// UnblockCmd returns a blocked card to ready.
type UnblockCmd struct {
	cardID    `embed:""`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (UnblockCmd) Help() string {
	return `A card blocked because its max-attempts ran out gets a fresh budget.

Examples:

    bl unblock --id A3` + exitCodesHelp
}

func (c *UnblockCmd) Run(a *App) error {
	id, err := c.id(a, "unblock")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Unblock(a.ctx, a.Mutation(c.RequestID), id)
	if err != nil {
		return err
	}
	return a.emitCard(card, "unblocked")
}
