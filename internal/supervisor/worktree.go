package supervisor

import (
	"context"
	"path/filepath"
	"strings"

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
	repo string // the repository's main work tree
	gitwork.Worktree
}

// worktreeFor gives card a worktree of the repository the backlog belongs
// to, under its git directory (bl-worktrees/<id>), so the user's working
// tree and index are never touched and nothing shows in git status. A
// worktree an earlier run left on the card's branch (a crash, a failure)
// is reused, as is the branch of a card claimed again.
func (s *supervisor) worktreeFor(ctx context.Context, card ledger.Card) (*cardTree, error) {
	repo, err := gitwork.TopLevel(ctx, filepath.Dir(s.dir))
	if err != nil {
		return nil, err
	}
	common, err := gitwork.Run(ctx, repo, "rev-parse", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(repo, common)
	}
	pattern := s.o.Worktree.Branch
	if pattern == "" {
		pattern = DefaultBranch
	}
	branch := strings.ReplaceAll(pattern, "{id}", card.ID)
	if _, err := gitwork.Run(ctx, repo, "check-ref-format", "--branch", branch); err != nil {
		return nil, ledger.Errorf(ledger.ErrInvalid, "branch %q for card %s is not a valid branch name (worktree.branch in config.json)", branch, card.ID)
	}
	dir := filepath.Join(common, "bl-worktrees", card.ID)
	wt, err := gitwork.Prepare(ctx, repo, dir, branch, s.o.Worktree.Base)
	if err != nil {
		return nil, err
	}
	return &cardTree{repo: repo, Worktree: wt}, nil
}
