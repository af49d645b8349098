package cli

// DepCmd is the dependency verbs people bring from beads: bl dep add A B
// is bl link A B, bl dep rm A B is bl unlink A B.
type DepCmd struct {
	Add DepAddCmd `cmd:"" help:"Make FROM depend on TO (bl link FROM TO)."`
	Rm  DepRmCmd  `cmd:"" aliases:"remove" help:"FROM no longer depends on TO (bl unlink FROM TO)."`
}

func (DepCmd) Help() string {
	return `"bl dep add A B" reads "A depends on B": A is not claimable until B is
done. Other link types (duplicates, related, ...) are bl link --type.

Examples:

    bl dep add A2 A1
    bl dep rm A2 A1` + exitCodesHelp
}

// DepAddCmd adds a dependency.
type DepAddCmd struct {
	linkEnds  `embed:""`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (c *DepAddCmd) Run(a *App) error {
	from, to, err := c.ends(a, "dep add")
	if err != nil {
		return err
	}
	return a.link(from, to, "", c.RequestID)
}

// DepRmCmd removes a dependency.
type DepRmCmd struct {
	linkEnds  `embed:""`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (c *DepRmCmd) Run(a *App) error {
	from, to, err := c.ends(a, "dep rm")
	if err != nil {
		return err
	}
	return a.unlink(from, to, "", c.RequestID)
}
