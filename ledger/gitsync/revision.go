package gitsync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// ErrUnknownRevision: a revision names no commit in the repository.
var ErrUnknownRevision = errors.New("unknown revision")

// Resolve finds the commit a revision names, as git rev-parse does: a
// branch, tag, hash or abbreviated hash, HEAD, the ~ and ^ suffixes, and
// the forms only git knows (@{u}, main@{1}, @{-1}, :/text, asked of the
// system git), so that bl diff names the commit git would, in bl-git as
// in the lean bl (which asks git cat-file). A...B names the merge base of A and B (either side
// empty is HEAD), the old side git diff A...B compares B with: what B
// adds since it left A.
func (g *Repo) Resolve(rev string) (plumbing.Hash, error) {
	if a, b, ok := strings.Cut(rev, "..."); ok {
		return g.mergeBase(a, b)
	}
	unknown := fmt.Errorf("%w %q: name a commit, branch or tag of %s (see git log)", ErrUnknownRevision, rev, g.root)
	if strings.HasPrefix(rev, "-") {
		return plumbing.ZeroHash, unknown // never an option of git's
	}
	if strings.ContainsAny(rev, "@:{") {
		// go-git reads main@{u} as main and knows no reflog, upstream or
		// :/text: git does (one process; a name, a hash and ~ or ^ steps
		// go-git reads itself).
		h, err := g.gitResolve(rev)
		if errors.Is(err, gitdir.ErrNoGit) {
			return plumbing.ZeroHash, fmt.Errorf("%w %q: git resolves it, and git is not installed", ErrUnknownRevision, rev)
		}
		if err != nil {
			return plumbing.ZeroHash, unknown
		}
		return h, nil
	}
	h, err := g.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil || h == nil || h.IsZero() {
		// What go-git does not find git may (a tag of a tag): asked on
		// this path only.
		got, err := g.gitResolve(rev)
		if err != nil {
			return plumbing.ZeroHash, unknown
		}
		return got, nil
	}
	return *h, nil
}

// gitResolve is the commit the system git names rev, tags peeled. Nothing
// is appended to rev (":/text^{commit}" would be another pattern), and it
// is never an option (--end-of-options). A tree or a blob is no commit.
func (g *Repo) gitResolve(rev string) (plumbing.Hash, error) {
	out, err := gitdir.Run(context.Background(), g.root, "rev-parse", "--verify", "--quiet", "--end-of-options", rev)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := plumbing.NewHash(out)
	if h.IsZero() || h.String() != out {
		return plumbing.ZeroHash, ErrUnknownRevision
	}
	for range 16 { // a tag of a tag...: git peels as deep
		o, err := g.repo.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch o.Type() {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			t, err := object.DecodeTag(g.repo.Storer, o)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			h = t.Target
		default:
			return plumbing.ZeroHash, ErrUnknownRevision
		}
	}
	return plumbing.ZeroHash, ErrUnknownRevision
}

// mergeBase is the best common ancestor of revisions a and b ("" is HEAD).
func (g *Repo) mergeBase(a, b string) (plumbing.Hash, error) {
	var cs [2]*object.Commit
	for i, rev := range []string{a, b} {
		if rev == "" {
			rev = "HEAD"
		}
		h, err := g.Resolve(rev)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if cs[i], err = g.commit(h); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	bases, err := cs[0].MergeBase(cs[1])
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if len(bases) == 0 {
		return plumbing.ZeroHash, fmt.Errorf("%w %q: %s and %s have no common ancestor", ErrUnknownRevision, a+"..."+b, a, b)
	}
	return bases[0].Hash, nil
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

// BacklogPairAt reads the backlogs of two commits for bl diff. The archive
// segments both hold with the same bytes (the same blob) are left unread
// on both sides, and a snapshot both hold with the same bytes is read
// once: comparing adjacent commits then reads what differs, not the
// history. The loaders read a side's unread files, for a comparison that
// needs them (ledger.DiffUnread).
func (g *Repo) BacklogPairAt(oldRev, newRev string) (trees [2]ledger.Tree, loads [2]ledger.Loader, commits [2]plumbing.Hash, err error) {
	var hashes [2]map[string]plumbing.Hash
	for i, rev := range []string{oldRev, newRev} {
		if commits[i], err = g.Resolve(rev); err != nil {
			return trees, loads, commits, err
		}
		// Names and blob hashes first; the files that may be left unread
		// are read below, once both sides are known.
		if trees[i], hashes[i], err = g.readBacklogUnread(commits[i], ledger.Tracked, func(string, plumbing.Hash) bool { return true }); err != nil {
			return trees, loads, commits, err
		}
	}
	read := map[plumbing.Hash][]byte{}
	for i := range trees {
		for _, name := range trees[i].Unread() {
			h := hashes[i][name]
			if other, ok := hashes[1-i][name]; ok && other == h && name != ledger.SnapshotFile {
				continue // the same segment on both sides
			}
			data, ok := read[h]
			if !ok {
				trace("blob", name)
				if data, err = g.blob(h); err != nil {
					return trees, loads, commits, fmt.Errorf("%s/%s: %w", g.prefix, name, err)
				}
				if data == nil {
					data = []byte{}
				}
				read[h] = data
			}
			trees[i][name] = data
		}
	}
	for i := range loads {
		hs := hashes[i]
		loads[i] = func(name string) ([]byte, error) {
			h, ok := hs[name]
			if !ok {
				return nil, fmt.Errorf("%s: no such file in the commit", name)
			}
			trace("blob", name)
			return g.blob(h)
		}
	}
	return trees, loads, commits, nil
}
