package cli

import "fmt"

// MergeDriverCmd is the git merge driver bl init configures.
type MergeDriverCmd struct {
	KeepOurs bool   `name:"keep-ours" help:"Keep our version as it is (for snapshot.json, which bl rebuilds)."`
	Base     string `arg:"" name:"base" help:"%O: the common ancestor's version."`
	Ours     string `arg:"" name:"ours" help:"%A: our version; the result is written here."`
	Theirs   string `arg:"" name:"theirs" help:"%B: their version."`
}

func (MergeDriverCmd) Help() string {
	return `An optional merge driver for .backlog/ledger.jsonl and archive segments.
Every clone already merges them with git's built-in union driver (the
backlog's tracked .gitattributes, written by bl init), which needs no setup;
bl settles the order and duplicates a union leaves when it reads. This
driver writes every event of the three versions once, in (at, id) order,
so readers skip that step. It folds to the same state as git's union.

To use it in one clone (git config is never cloned, and a line in
.git/info/attributes overrides the tracked .gitattributes):

    git config merge.bl.driver 'bl merge-driver %O %A %B'
    printf '%s\n' '.backlog/ledger.jsonl merge=bl' '.backlog/archive/*.jsonl merge=bl' >> .git/info/attributes

It exits 0 and never writes conflict markers: input that is not a valid
event file (markers left by an older merge) falls back to git's union of
the lines. It needs bl on git's PATH; where bl is missing git reports the
driver failed.` + exitCodesHelp
}

func (c *MergeDriverCmd) Run(a *App) error {
	if c.KeepOurs {
		return nil
	}
	g, err := a.needGit("bl merge-driver")
	if err != nil {
		return err
	}
	if err := g.MergeDriver(c.Base, c.Ours, c.Theirs); err != nil {
		return fmt.Errorf("merge-driver: %w", err)
	}
	return nil
}

// gitWork: the merge driver is part of bl-git; --keep-ours does nothing.
func (c *MergeDriverCmd) gitWork(*App) string {
	if c.KeepOurs {
		return ""
	}
	return "bl merge-driver"
}
