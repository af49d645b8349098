package gitcli

import (
	"errors"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync"
)

// BacklogAt reads the backlog's tracked files as the commit rev names
// holds them, for bl diff. An unknown revision is invalid input.
func (Git) BacklogAt(a *cli.App, rev string) (ledger.Tree, string, error) {
	b, err := a.Open()
	if err != nil {
		return nil, "", err
	}
	g, err := gitsync.OpenRepo(b.Dir())
	if err != nil {
		return nil, "", err
	}
	t, h, err := g.BacklogAt(rev)
	if errors.Is(err, gitsync.ErrUnknownRevision) {
		return nil, "", ledger.Errorf(ledger.ErrInvalid, "%v", err)
	}
	if err != nil {
		return nil, "", err
	}
	return t, h.String(), nil
}
