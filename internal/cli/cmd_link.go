package cli

import "github.com/bl-backlog/bl/ledger"

// LinkCmd adds a dependency or another typed link.
type LinkCmd struct {
	linkEnds  `embed:""`
	Type      string `default:"blocks" placeholder:"TYPE" help:"blocks, supersedes, duplicates, discovered-from or related."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (LinkCmd) Help() string {
	return `FROM depends on TO (or --from and --to): it is not claimable until TO is
done; bl dep add FROM TO says the same. A link
that would close a cycle is refused with the cycle named (exit code 4).

--type says how --from relates to --to:

    blocks           --to blocks --from (the default; depends_on)
    supersedes       --to supersedes --from
    duplicates       --from is a duplicate of --to
    discovered-from  --from was found while working on --to
    related          the two are related

blocks, supersedes and duplicates hold --from back while --to is open, and
no cycle of them is allowed; discovered-from and related are for the
record and hold nothing back. bl show lists a card's links both ways.

Examples:

    bl link A2 A1
    bl link --from A2 --to A1
    bl link --from A9 --to A7 --type duplicates
    bl link --from A12 --to A2 --type discovered-from` + exitCodesHelp
}

func (c *LinkCmd) Run(a *App) error {
	from, to, err := c.ends(a, "link")
	if err != nil {
		return err
	}
	return a.link(from, to, c.Type, c.RequestID)
}

// link makes from depend on to (or link them with another type) and
// prints the card (bl link, bl dep add).
func (a *App) link(from, to, typ, requestID string) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.LinkTyped(a.ctx, ledger.LinkRequest{Mutation: a.Mutation(requestID), From: from, To: to, Type: typ})
	if err != nil {
		return err
	}
	return a.emitCard(card, "linked")
}
