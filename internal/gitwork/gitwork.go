// Package gitwork runs the system git for what bl does to a repository's
// work, as opposed to its backlog: a git worktree per card for bl run
// --worktree, the branch head it records, the files a commit stages for
// bl paths check. Every call goes through Run, which is gitdir.Run;
// nothing here touches the user's working tree or index (worktrees are
// created beside it, each with an index of its own).
//
// bl reaches git through four packages, each for one thing: gitdir finds
// a repository's directories from the files git leaves on disk and is the
// one door to the system git (Run); internal/gitwork runs that git for a
// card's work (worktrees, branch heads, staged files); ledger/gitsync is
// the backlog's own traffic with git through go-git (commit, fetch,
// rebase, push, lease refs, the merge driver); internal/cli/gitcli is
// bl-git's commands on top of gitsync.
package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/gitdir"
)

// ErrNoGit: the git binary is not on PATH.
var ErrNoGit = errors.New("git is not installed (bl run --worktree and bl paths check run the git binary)")

// Run runs git with args in dir and returns its standard output, trimmed
// of the final newline. An error carries git's standard error. It is
// gitdir.Run, the one door bl runs git through, and its rule for a git
// hook's environment.
func Run(ctx context.Context, dir string, args ...string) (string, error) {
	return noGit(gitdir.Run(ctx, dir, args...))
}

// noGit names what needs git when it is missing.
func noGit(out string, err error) (string, error) {
	if errors.Is(err, gitdir.ErrNoGit) {
		return "", ErrNoGit
	}
	return out, err
}

// TopLevel is the root of the work tree enclosing dir.
func TopLevel(ctx context.Context, dir string) (string, error) {
	return Run(ctx, dir, "rev-parse", "--show-toplevel")
}

// Worktree is a card's worktree: its directory and branch.
type Worktree struct {
	Dir, Branch string
	Reused      bool   // the branch (or the worktree) was there already
	MovedAside  string // where a worktree (or directory) in the way was moved, or ""
	MovedWhy    string // what it was: "on branch x, with uncommitted changes"
}

// Prepare gives branch a worktree at dir, inside the repository at repo:
// a worktree left at dir by an earlier run on the same branch is reused,
// changes and all; an existing branch is checked out there (a reclaimed
// card goes on from its branch); otherwise the branch is created from
// base (HEAD when empty). The user's own working tree and index are not
// touched.
//
// Nothing at dir is ever deleted: a worktree there on another branch (or a
// detached HEAD), or a directory that is not a worktree of its own, is
// moved to aside, which Worktree.MovedAside then names. When it cannot be
// moved, Prepare refuses with ErrWorktreeKept and leaves it as it is.
func Prepare(ctx context.Context, repo, dir, branch, base, aside string) (Worktree, error) {
	wt := Worktree{Dir: dir, Branch: branch}
	if cur, err := Run(ctx, dir, "rev-parse", "--abbrev-ref", "HEAD"); err == nil && sameDir(ctx, dir) {
		if cur == branch {
			wt.Reused = true
			return wt, nil
		}
		// The command switched branch in it: what is there may be the
		// only copy of its work.
		wt.MovedWhy = describe(ctx, dir, cur)
		if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
			return wt, err
		}
		if _, err := Run(ctx, repo, "worktree", "move", dir, aside); err != nil {
			return wt, fmt.Errorf("%w: %s is %s and could not be moved aside: %v", ErrWorktreeKept, dir, wt.MovedWhy, err)
		}
		wt.MovedAside = aside
	}
	// Metadata a crash left without its directory.
	_, _ = Run(ctx, repo, "worktree", "prune")
	if entries, err := os.ReadDir(dir); err == nil {
		// A directory that is not a worktree of its own (a crash in git
		// worktree add, metadata lost): kept unless empty.
		if len(entries) > 0 {
			if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
				return wt, err
			}
			if err := os.Rename(dir, aside); err != nil {
				return wt, fmt.Errorf("%w: %s is not a git worktree and could not be moved aside: %v", ErrWorktreeKept, dir, err)
			}
			wt.MovedAside, wt.MovedWhy = aside, "not a git worktree"
		} else if err := os.Remove(dir); err != nil {
			return wt, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return wt, err
	}
	if _, err := Run(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		wt.Reused = true
		_, err := Run(ctx, repo, "worktree", "add", dir, branch)
		return wt, err
	}
	if base == "" {
		base = "HEAD"
	}
	_, err := Run(ctx, repo, "worktree", "add", "-b", branch, dir, base)
	return wt, err
}

// ErrWorktreeKept: a worktree holding work bl run would otherwise lose
// was left where it is, and the card's run cannot go on.
var ErrWorktreeKept = errors.New("worktree kept")

// describe says where the worktree at dir stands: its branch (cur, from
// rev-parse --abbrev-ref, "HEAD" when detached) and whether it holds
// uncommitted changes.
func describe(ctx context.Context, dir, cur string) string {
	what := "on branch " + cur
	if cur == "HEAD" {
		what = "on a detached HEAD"
	}
	if st, err := Run(ctx, dir, "status", "--porcelain"); err != nil || st != "" {
		what += ", with uncommitted changes"
	}
	return what
}

// sameDir reports whether dir is the top level of a work tree of its own
// (not a directory inside the user's repository).
func sameDir(ctx context.Context, dir string) bool {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return false
	}
	a, err1 := filepath.EvalSymlinks(top)
	b, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && a == b
}

// Head is the commit a branch points at.
func Head(ctx context.Context, repo, branch string) (string, error) {
	return Run(ctx, repo, "rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
}

// Remove takes a clean worktree out (its branch stays). A worktree that is
// not on branch, or holds uncommitted changes or untracked files, stays:
// kept says why ("" when it was removed). Ignored files go with it.
func Remove(ctx context.Context, repo, dir, branch string) (kept string, err error) {
	cur, err := Run(ctx, dir, "rev-parse", "--abbrev-ref", "HEAD")
	if err != nil {
		return "", err
	}
	if cur != branch {
		return describe(ctx, dir, cur), nil
	}
	// Without --force git refuses a worktree with changes.
	if st, err := Run(ctx, dir, "status", "--porcelain"); err != nil || st != "" {
		return "on branch " + cur + ", with uncommitted changes", err
	}
	_, err = Run(ctx, repo, "worktree", "remove", dir)
	return "", err
}

// StagedFiles lists the files the index of the work tree at dir stages
// for the next commit, as paths from its root. In a pre-commit hook that
// is the index git commit uses (GIT_INDEX_FILE, kept for this call).
func StagedFiles(ctx context.Context, dir string) ([]string, error) {
	out, err := noGit(gitdir.RunIndex(ctx, dir, gitdir.HookIndex(), "diff", "--cached", "--name-only", "-z", "--no-renames"))
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}
