package cli

// RestoreCmd undoes a delete.
type RestoreCmd struct {
	cardID    `embed:""`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (RestoreCmd) Help() string {
	return `The card is back as it was before bl delete, its lease (if it had one)
gone; links --force removed stay removed.

Examples:

    bl restore A7` + exitCodesHelp
}

func (c *RestoreCmd) Run(a *App) error {
	id, err := c.id(a, "restore")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Restore(a.ctx, a.Mutation(c.RequestID), id)
	if err != nil {
		return err
	}
	return a.emitCard(card, "restored")
}
