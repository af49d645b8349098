package cli

// UnlinkCmd removes a dependency.
type UnlinkCmd struct {
	From      string `required:"" placeholder:"ID" help:"The card that waits."`
	To        string `required:"" placeholder:"ID" help:"The card it no longer waits for."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func init() {
	register(command{name: "unlink", rank: 200, help: "Remove a dependency.", new: func() any { return &UnlinkCmd{} }})
}

func (UnlinkCmd) Help() string {
	return `Examples:

    bl unlink --from A2 --to A1` + exitCodesHelp
}

func (c *UnlinkCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Unlink(a.ctx, a.Mutation(c.RequestID), c.From, c.To)
	if err != nil {
		return err
	}
	return a.emitCard(card, "unlinked")
}
