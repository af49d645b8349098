package gitsync

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/bl-backlog/bl/ledger"
)

// commit commits the backlog tree t to the branch. With a remote commit
// it becomes a second parent (or the only one, when the branch has nothing
// the remote lacks). Outside the backlog the commit keeps the branch's
// files; when the remote changed files there too, only git can merge them
// and commit fails with ErrDiverged, leaving the branch as it was.
//
// read supplies the backlog tree; it is read again whenever another commit
// moved the branch meanwhile, so a commit never carries a backlog older
// than its parent's.
func (s *Syncer) commit(read func() (backlogFiles, error), remote plumbing.Hash) (head plumbing.Hash, committed bool, msg string, err error) {
	for range 20 {
		// The branch as it was before the read: the commit's parent, and
		// the old value the ref update checks.
		local, err := s.g.refHash(s.branch)
		if err != nil {
			return head, false, "", err
		}
		f, err := read()
		if err != nil {
			return head, false, "", err
		}
		head, committed, msg, err = s.commitOnce(f, remote, local)
		if !errors.Is(err, errRefMoved) {
			return head, committed, msg, err
		}
	}
	return head, committed, msg, fmt.Errorf("%w: %s keeps moving", ErrGitLocked, s.branch)
}

func (s *Syncer) commitOnce(f backlogFiles, remote, local plumbing.Hash) (plumbing.Hash, bool, string, error) {
	checkedOut := false
	if cur, err := s.g.currentBranch(); err == nil && cur == s.branch {
		checkedOut = true
	}
	h, committed, msg, index, err := s.buildCommit(f, remote, local, checkedOut)
	if err != nil || h == local {
		return h, committed, msg, err
	}
	if err := s.g.updateRef(s.branch, local, h); err != nil {
		return local, false, "", err
	}
	if checkedOut {
		// The commit stands; a busy index only leaves git status showing
		// the backlog as modified until the next sync.
		index()
	}
	return h, committed, msg, nil
}

// buildCommit stores the commit of the backlog files f onto local (and
// remote, see parents) and returns it, without moving the branch:
// committed is false when it is a parent itself (nothing new, at most a
// fast-forward). index, once the branch is moved to it, updates the index
// entries of the files it holds.
func (s *Syncer) buildCommit(f backlogFiles, remote, local plumbing.Hash, checkedOut bool) (head plumbing.Hash, committed bool, msg string, index func(), err error) {
	g, t := s.g, f.t
	parents, base, err := s.parents(local, remote, checkedOut)
	if err != nil {
		return local, false, "", nil, err
	}
	baseRoot, err := g.rootTree(base)
	if err != nil {
		return local, false, "", nil, err
	}
	baseSub, err := g.subtree(baseRoot)
	if err != nil {
		return local, false, "", nil, err
	}
	sub, blobs, err := g.backlogTree(baseSub, t, f.blobs)
	if err != nil {
		return local, false, "", nil, err
	}
	root, err := g.splice(baseRoot, sub, true)
	if err != nil {
		return local, false, "", nil, err
	}
	var indexOthers []func()
	if root, indexOthers, err = s.bringInOthers(root, local, remote, parents); err != nil {
		return local, false, "", nil, err
	}
	index = func() {
		_ = g.updateIndex(t, blobs, f.sizes)
		for _, f := range indexOthers {
			f()
		}
	}
	if len(parents) == 1 {
		if pt, err := g.rootTree(parents[0]); err == nil && pt != nil && pt.Hash == root {
			return parents[0], false, "", index, nil // nothing new
		}
	}
	var first plumbing.Hash
	if len(parents) > 0 {
		first = parents[0]
	}
	prev, next, err := s.changedSince(first, t, blobs)
	if err != nil {
		return local, false, "", nil, err
	}
	msg = s.message(prev, next, len(parents) > 1)
	sig := s.signature()
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root, ParentHashes: parents}
	o := g.repo.Storer.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return local, false, "", nil, err
	}
	h, err := g.store(o)
	if err != nil {
		return local, false, "", nil, err
	}
	return h, true, msg, index, nil
}

// bringInOthers handles the other backlogs of the repository that the
// remote commit changed (two .backlog directories in one repository, see
// otherBacklogs): each takes the remote's events through its own ledger,
// under its own lock, as a pull of it would, and the commit carries its
// files as they then stand. It returns the new root and what updates the
// index for those files once the commit stands.
func (s *Syncer) bringInOthers(root plumbing.Hash, local, remote plumbing.Hash, parents []plumbing.Hash) (plumbing.Hash, []func(), error) {
	if remote.IsZero() || remote == local || !slices.Contains(parents, remote) || local.IsZero() {
		return root, nil, nil
	}
	g := s.g
	lt, err := g.rootTree(local)
	if err != nil {
		return root, nil, err
	}
	rt, err := g.rootTree(remote)
	if err != nil {
		return root, nil, err
	}
	others, _, err := g.otherBacklogs(lt, rt)
	if err != nil || len(others) == 0 {
		return root, nil, err
	}
	var index []func()
	for _, o := range others {
		og := g.at(o)
		up, err := og.readBacklog(remote)
		if err != nil {
			return root, nil, err
		}
		dir := filepath.Join(g.root, filepath.FromSlash(o))
		b, err := ledger.Open(dir, ledger.Options{})
		if err != nil {
			return root, nil, fmt.Errorf("%s: %w", dir, err)
		}
		ctx := context.Background()
		_, _, err = b.ApplyUpstream(ctx, up)
		var ot ledger.Tree
		if err == nil {
			ot, err = b.Tree(ctx)
		}
		b.Close()
		if err != nil {
			return root, nil, fmt.Errorf("bring in %s: %w", dir, err)
		}
		rootObj, err := g.repo.TreeObject(root)
		if err != nil {
			return root, nil, err
		}
		baseSub, err := og.subtree(rootObj)
		if err != nil {
			return root, nil, err
		}
		osub, blobs, err := og.backlogTree(baseSub, ot, nil)
		if err != nil {
			return root, nil, err
		}
		if root, err = og.splice(rootObj, osub, true); err != nil {
			return root, nil, err
		}
		index = append(index, func() { _ = og.updateIndex(ot, blobs, nil) })
	}
	return root, index, nil
}

// mergeable fails with ErrDiverged when a commit of the backlog onto the
// remote commit could not be made (see parents), before anything is
// written.
func (s *Syncer) mergeable(remote plumbing.Hash) error {
	local, err := s.g.refHash(s.branch)
	if err != nil {
		return err
	}
	cur, curErr := s.g.currentBranch()
	_, _, err = s.parents(local, remote, curErr == nil && cur == s.branch)
	return err
}

// parents picks the new commit's parents and the commit whose files
// outside the backlog it keeps.
func (s *Syncer) parents(local, remote plumbing.Hash, checkedOut bool) (parents []plumbing.Hash, base plumbing.Hash, err error) {
	g := s.g
	switch {
	case remote.IsZero() || remote == local:
		if local.IsZero() {
			return nil, local, nil
		}
		return []plumbing.Hash{local}, local, nil
	case local.IsZero():
		if checkedOut {
			if err := s.sameOutside(local, remote); err != nil {
				return nil, local, err
			}
		}
		return []plumbing.Hash{remote}, remote, nil
	}
	lc, err := g.commit(local)
	if err != nil {
		return nil, local, err
	}
	rc, err := g.commit(remote)
	if err != nil {
		return nil, local, err
	}
	if ok, err := rc.IsAncestor(lc); err != nil {
		return nil, local, err
	} else if ok {
		return []plumbing.Hash{local}, local, nil
	}
	if ok, err := lc.IsAncestor(rc); err != nil {
		return nil, local, err
	} else if ok {
		if checkedOut {
			if err := s.sameOutside(local, remote); err != nil {
				return nil, local, err
			}
		}
		return []plumbing.Hash{remote}, remote, nil
	}
	// Diverged: a merge. Outside the backlog one side must be unchanged.
	parents = []plumbing.Hash{local, remote}
	lt, _ := lc.Tree()
	rt, _ := rc.Tree()
	if same, err := g.sameOutside(lt, rt); err != nil || same {
		return parents, local, err
	}
	bases, err := lc.MergeBase(rc)
	if err != nil {
		return nil, local, err
	}
	if len(bases) == 1 {
		bt, err := bases[0].Tree()
		if err != nil {
			return nil, local, err
		}
		if same, err := g.sameOutside(bt, rt); err != nil || same {
			return parents, local, err // only we changed files outside the backlog
		}
		if same, err := g.sameOutside(bt, lt); err != nil {
			return nil, local, err
		} else if same && !checkedOut {
			return parents, remote, nil // only they did, and no worktree shows ours
		}
	}
	return nil, local, s.divergedError()
}

// sameOutside fails with ErrDiverged unless the two commits hold the same
// files outside the backlog: moving a checked-out branch to the remote's
// files would leave the worktree behind.
func (s *Syncer) sameOutside(local, remote plumbing.Hash) error {
	lt, err := s.g.rootTree(local)
	if err != nil {
		return err
	}
	rt, err := s.g.rootTree(remote)
	if err != nil {
		return err
	}
	same, err := s.g.sameOutside(lt, rt)
	if err != nil {
		return err
	}
	if !same {
		return s.divergedError()
	}
	return nil
}

func (s *Syncer) divergedError() error {
	remote := s.o.Remote
	if remote == "" {
		remote = s.url
	}
	pull := fmt.Sprintf("git -C %s pull --no-rebase --no-edit %s %s", shellQuote(s.g.root), shellQuote(remote), shellQuote(s.branch.Short()))
	resync := fmt.Sprintf("bl sync --push --remote %s --branch %s", shellQuote(remote), shellQuote(s.branch.Short()))
	run := pull + " && " + resync
	if cur, err := s.g.currentBranch(); err != nil || cur != s.branch {
		run = fmt.Sprintf("git -C %s checkout %s && %s", shellQuote(s.g.root), shellQuote(s.branch.Short()), run)
	}
	where := s.g.prefix
	if where == "" {
		where = "the backlog"
	}
	return fmt.Errorf("%w: %s has commits that change files outside %s, which only git merges (or exchange the backlog on a branch of its own, sync.branch). "+
		"The backlog was committed on %s and nothing of the remote's was applied. To bring the remote's commits in with git (its union merge of .backlog merges the backlog) and push, run: %s",
		ErrDiverged, s.remoteLabel(), where, s.branch.Short(), run)
}

// shellQuote quotes a word for a POSIX shell when it needs it, so printed
// advice can be pasted as it is.
func shellQuote(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// changedSince returns the backlog files of commit parent and of t (whose
// blobs are given) for the commit message, leaving out the archive
// segments both hold with the same blob: Summarize compares only what
// changed, and a segment is read only when it is new.
func (s *Syncer) changedSince(parent plumbing.Hash, t ledger.Tree, blobs map[string]plumbing.Hash) (prev, next ledger.Tree, err error) {
	same := func(name string, h plumbing.Hash) bool { return blobs[name] == h }
	prev, hashes, err := s.g.readBacklogUnread(parent, summarized, same)
	if err != nil {
		return nil, nil, err
	}
	next = ledger.Tree{}
	for name, data := range t {
		if !summarized(name) {
			continue
		}
		if !isSegment(name) {
			next[name] = data
			continue
		}
		if h, ok := hashes[name]; ok && h == blobs[name] {
			delete(prev, name) // unchanged
			continue
		}
		if data == nil {
			trace("blob", name)
			if data, err = s.g.blob(blobs[name]); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		next[name] = data
	}
	for name := range prev {
		if prev[name] == nil { // a segment t has with the same blob, gone meanwhile
			delete(prev, name)
		}
	}
	return prev, next, nil
}

// summarized reports whether Summarize looks at a file: the event files,
// not the snapshot or the settings.
func summarized(name string) bool {
	return name == ledger.LedgerFile || isSegment(name)
}
