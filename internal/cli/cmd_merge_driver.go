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
	return `Git runs this to merge .backlog/ledger.jsonl and archive segments
(configured by bl init in .gitattributes and .git/config):

    [merge "bl"]
        driver = bl merge-driver %O %A %B

It writes every event of the three versions once, in (at, id) order, into
%A and exits 0: never conflict markers. Input that is not a valid ledger
exits 1 and leaves %A alone, so git reports a conflict instead.` + exitCodesHelp
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
