package supervisor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/bl-backlog/bl/internal/gitwork"
	"github.com/bl-backlog/bl/ledger"
)

// DefaultBranch names a card's branch under --worktree: "{id}" is the card
// id.
const DefaultBranch = "bl/{id}"

// WorktreeOptions configure a git worktree per card (bl run --worktree).
type WorktreeOptions struct {
	Branch string // the branch name pattern; DefaultBranch when empty
	Base   string // what a new branch starts from; HEAD when empty
	Keep   bool   // keep the worktree after a success too
}

// cardTree is the worktree a card's command runs in.
type cardTree struct {
	repo   string // the repository's main work tree
	common string // its git common directory
	gitwork.Worktree
}

// worktreeFor gives card a worktree of the repository the backlog belongs
// to, under its git directory (bl-worktrees/<id>), so the user's working
// tree and index are never touched and nothing shows in git status. A
// worktree an earlier run left on the card's branch (a crash, a failure)
// is reused, as is the branch of a card claimed again. One in the way (on
// another branch, or not a worktree) is moved aside, never deleted.
func (s *supervisor) worktreeFor(ctx context.Context, card ledger.Card, repo, common string) (*cardTree, error) {
	pattern := s.o.Worktree.Branch
	if pattern == "" {
		pattern = DefaultBranch
	}
	// config.json is tracked: a teammate's setting must not send agents'
	// commits to a branch people share (main, a release branch). Each card
	// gets its own branch, under a namespace of its own.
	if i := strings.Index(pattern, "{id}"); i < 0 || !strings.Contains(pattern[:i], "/") {
		return nil, ledger.Errorf(ledger.ErrInvalid, "worktree.branch %q in config.json must name each card's branch under a namespace of its own, with {id} after a slash (as bl/{id})", pattern)
	}
	branch := strings.ReplaceAll(pattern, "{id}", card.ID)
	if _, err := gitwork.Run(ctx, repo, "check-ref-format", "--branch", branch); err != nil {
		return nil, ledger.Errorf(ledger.ErrInvalid, "branch %q for card %s is not a valid branch name (worktree.branch in config.json)", branch, card.ID)
	}
	dir := filepath.Join(common, "bl-worktrees", card.ID)
	unlock, err := worktreeAdminLock(ctx, common)
	if err != nil {
		return nil, err
	}
	wt, err := gitwork.Prepare(ctx, repo, dir, branch, s.o.Worktree.Base, asidePath(common, card.ID))
	unlock()
	if wt.MovedAside != "" {
		s.logf("%s: the worktree %s was %s: moved aside to %s, as it was", card.ID, dir, wt.MovedWhy, wt.MovedAside)
	}
	if err != nil {
		return nil, err
	}
	return &cardTree{repo: repo, common: common, Worktree: wt}, nil
}

// gitDirs are the repository's main work tree and its git common
// directory, found once.
func (s *supervisor) gitDirs(ctx context.Context) (repo, common string, err error) {
	if s.repo != "" {
		return s.repo, s.common, nil
	}
	if repo, err = gitwork.TopLevel(ctx, filepath.Dir(s.dir)); err != nil {
		return "", "", err
	}
	if common, err = gitwork.Run(ctx, repo, "rev-parse", "--git-common-dir"); err != nil {
		return "", "", err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(repo, common)
	}
	s.repo, s.common = repo, common
	return repo, common, nil
}

// asidePath is where a worktree in the way of card id's goes:
// bl-worktrees-aside/<id>/<UTC time>, beside bl-worktrees (ids may hold
// dots, so no suffix on the id could not name another card).
func asidePath(common, id string) string {
	base := filepath.Join(common, "bl-worktrees-aside", id, time.Now().UTC().Format("20060102T150405Z"))
	p := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		p = base + "-" + strconv.Itoa(i)
	}
}

// worktreeAdminLock takes turns among the supervisors of one repository
// for git worktree add and remove: git reads every worktree's files under
// .git/worktrees while it makes or removes one, and two at once fail
// ("failed to read .git/worktrees/C/commondir"). Held for the git command
// only, never while a card's command runs.
func worktreeAdminLock(ctx context.Context, common string) (func(), error) {
	fl := flock.New(filepath.Join(common, "bl-worktree-admin.lock"))
	if _, err := fl.TryLockContext(ctx, 10*time.Millisecond); err != nil {
		return nil, err
	}
	return func() { _ = fl.Unlock() }, nil
}
