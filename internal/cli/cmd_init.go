package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bl-backlog/bl/ledger"
)

// InitCmd creates a backlog.
type InitCmd struct{}

func (InitCmd) Help() string {
	return `Creates .backlog/ at the root of the repository (the main worktree's root
inside a linked git worktree, so all worktrees share it), or at --dir.
Existing files are kept: running init twice is safe. In a linked worktree
it says so, and names the worktree's own checked-out .backlog/, if any: a
stale copy that bl neither reads nor updates.

Commit .backlog/ (git add .backlog): ledger.jsonl, config.json,
.gitignore and .gitattributes; the lock file, caches and *.broken files
stay local (.gitignore says so).

.backlog/.gitattributes makes every clone's git merge the backlog without
conflict markers, with no setup in the clone and whether bl is installed
there or not:

    ledger.jsonl merge=union -text
    archive/*.jsonl merge=union -text
    snapshot.json merge=union -text
    *.md merge=union -text

merge=union is git's built-in driver: a merge, pull, rebase or cherry-pick
keeps the lines of both sides. bl settles what that leaves when it reads:
lines out of order are taken in (at, id) order, a repeated line once, and
a union of two snapshots is rebuilt from the archive segments. bl warns
when a backlog in a git repository lacks this file; run bl init again to
add it. On a backlog set up by an older bl, init also removes the
merge=bl lines it put in the repository's root .gitattributes (they needed
a driver in each clone's .git/config); commit both files.

Examples:

    bl init
    bl init --dir /srv/team/.backlog` + exitCodesHelp
}

func (c *InitCmd) Run(a *App) error {
	dir, worktree, err := initDir(a.Dir)
	if err != nil {
		return err
	}
	g := a.ext.Git
	if g == nil && inGitRepo(dir) {
		if g, err = a.needGit(initWhat); err != nil {
			return err
		}
	}
	if g != nil {
		if err := trackedElsewhere(g, dir); err != nil {
			return err
		}
	}
	_, statErr := os.Stat(filepath.Join(dir, ledger.AttributesFile))
	created, err := ledger.Init(dir)
	if err != nil {
		return err
	}
	out := struct {
		Dir      string `json:"dir"`
		Created  bool   `json:"created"`
		Worktree string `json:"worktree,omitempty"`
		// StaleCopy is the linked worktree's own checked-out .backlog/,
		// which bl never reads.
		StaleCopy string      `json:"stale_copy,omitempty"`
		Merge     *MergeSetup `json:"merge_driver,omitempty"`
	}{Dir: dir, Created: created, Worktree: worktree}
	if worktree != "" {
		if p := filepath.Join(worktree, backlogDirName); isBacklog(p) {
			out.StaleCopy = p
		}
	}
	if g != nil {
		if out.Merge, err = g.SetupMerge(dir); err != nil {
			return fmt.Errorf("set up how git merges .backlog (.gitattributes): %w", err)
		}
	}
	return a.emit(out, func(w io.Writer) {
		if created {
			fmt.Fprintf(w, "initialized backlog in %s\n", dir)
		} else {
			fmt.Fprintf(w, "backlog already initialized in %s\n", dir)
		}
		if worktree != "" {
			fmt.Fprintf(w, "%s is a linked worktree: bl keeps one backlog for every worktree of the repository, in the main worktree, %s, and uses that one from here\n", worktree, dir)
			if out.StaleCopy != "" {
				fmt.Fprintf(w, "%s, checked out with this worktree's branch, is a stale copy: bl neither reads nor updates it\n", out.StaleCopy)
			}
		}
		if g != nil && statErr != nil {
			fmt.Fprintf(w, "git merges the backlog with its union driver, in every clone: %s (commit it with the backlog)\n", filepath.Join(dir, ledger.AttributesFile))
		}
		if out.Merge != nil && out.Merge.Changed {
			fmt.Fprintf(w, "removed the merge=bl lines an older bl init wrote in %s: %s replaces them; commit both\n", out.Merge.Attributes, filepath.Join(dir, ledger.AttributesFile))
		}
	})
}

const initWhat = "bl init in a git repository"

// trackedElsewhere refuses to start a fresh backlog where the checked-out
// commit tracks one this checkout does not have: a sparse checkout that
// leaves .backlog out, or a deleted directory. A fresh ledger there would
// be committed over the team's.
func trackedElsewhere(g Git, dir string) error {
	if _, err := os.Lstat(filepath.Join(dir, ledger.LedgerFile)); err == nil {
		return nil
	}
	t, _, err := g.BacklogAt(dir, "HEAD")
	if err != nil || len(t) == 0 {
		return nil // no commit yet, or nothing tracked there
	}
	p := ledger.GitPath(dir, "")
	return ledger.Errorf(ledger.ErrConflict, "HEAD tracks a backlog at %s (%d files) that this checkout does not have: it is outside the sparse-checkout set, or was deleted. "+
		"Check it out instead of starting a fresh one: git sparse-checkout add %s (or git checkout HEAD -- %s)", p, len(t), p, p)
}

// gitWork: in a git repository, init removes the merge driver lines an
// older bl init wrote, which bl-git does.
func (c *InitCmd) gitWork(a *App) string {
	dir, _, err := initDir(a.Dir)
	if err != nil || !inGitRepo(dir) {
		return ""
	}
	return initWhat
}

// warnNoAttributes warns, once per run, when the backlog in dir lies inside
// a git repository but has no .gitattributes: a merge there can leave
// conflict markers in the ledger. One stat on the way; the walk up to find
// .git runs only when the file is missing.
func (a *App) warnNoAttributes(dir string) {
	if _, err := os.Lstat(filepath.Join(dir, ledger.AttributesFile)); err == nil || !inGitRepo(dir) {
		return
	}
	a.Warn(fmt.Sprintf("%s has no %s, so a git merge of it can leave conflict markers in the ledger: run bl init to add it, then commit it (git add %s)",
		dir, ledger.AttributesFile, filepath.Join(dir, ledger.AttributesFile)))
}
