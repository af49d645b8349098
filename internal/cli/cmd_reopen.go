package cli

// ReopenCmd returns a done card to ready.
type ReopenCmd struct {
	ID        string `name:"id" required:"" help:"Card id."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (ReopenCmd) Help() string {
	return `Examples:

    bl reopen --id A1` + exitCodesHelp
}

func (c *ReopenCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Reopen(a.ctx, a.Mutation(c.RequestID), c.ID)
	if err != nil {
		return err
	}
	return a.emitCard(card, "reopened")
}
