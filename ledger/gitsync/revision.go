package gitsync

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bl-backlog/bl/ledger"
)

// ErrUnknownRevision: a revision names no commit in the repository.
var ErrUnknownRevision = errors.New("unknown revision")

// Resolve finds the commit a revision names: a branch, tag, hash or
// abbreviated hash, HEAD, and the ~ and ^ suffixes git rev-parse takes.
func (g *Repo) Resolve(rev string) (plumbing.Hash, error) {
	h, err := g.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil || h == nil || h.IsZero() {
		return plumbing.ZeroHash, fmt.Errorf("%w %q: name a commit, branch or tag of %s (see git log)", ErrUnknownRevision, rev, g.root)
	}
	return *h, nil
}

// BacklogAt reads the tracked backlog files as the commit rev names holds
// them; a commit without a backlog gives an empty tree. It returns the
// commit's hash too.
func (g *Repo) BacklogAt(rev string) (ledger.Tree, plumbing.Hash, error) {
	h, err := g.Resolve(rev)
	if err != nil {
		return nil, h, err
	}
	t, err := g.readBacklog(h)
	return t, h, err
}
