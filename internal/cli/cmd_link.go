package cli

// LinkCmd adds a dependency.
type LinkCmd struct {
	From      string `required:"" placeholder:"ID" help:"The card that waits."`
	To        string `required:"" placeholder:"ID" help:"The card it waits for."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func init() {
	register(command{name: "link", rank: 190, help: "Make one card depend on another.", new: func() any { return &LinkCmd{} }})
}

func (LinkCmd) Help() string {
	return `--from depends on --to: it is not claimable until --to is done. A link
that would close a cycle is refused with the cycle named (exit code 4).

Examples:

    bl link --from A2 --to A1` + exitCodesHelp
}

func (c *LinkCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Link(a.ctx, a.Mutation(c.RequestID), c.From, c.To)
	if err != nil {
		return err
	}
	return a.emitCard(card, "linked")
}
