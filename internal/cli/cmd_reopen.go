package cli

// ReopenCmd returns a done card to ready.
type ReopenCmd struct {
	cardID    `embed:""`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (ReopenCmd) Help() string {
	return `Examples:

    bl reopen --id A1` + exitCodesHelp
}

func (c *ReopenCmd) Run(a *App) error {
	id, err := c.id(a, "reopen")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Reopen(a.ctx, a.Mutation(c.RequestID), id)
	if err != nil {
		return err
	}
	return a.emitCard(card, "reopened")
}
