package cli

import (
	"fmt"
	"io"
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

Commit .backlog/ledger.jsonl, config.json and .gitignore; the lock file
and *.broken files stay local.

In a git repository, init also makes plain git merge, pull and rebase
merge the backlog by event instead of by line: it adds to .gitattributes

    .backlog/ledger.jsonl merge=bl -text
    .backlog/archive/*.jsonl merge=bl -text
    .backlog/snapshot.json merge=bl-snapshot -text

and defines the drivers in .git/config (a clone needs bl init once, since
git does not clone its config):

    [merge "bl"]
        driver = bl merge-driver %O %A %B
    [merge "bl-snapshot"]
        driver = true

The ledger driver writes the union of both sides' events in order; the
snapshot keeps our side and bl rebuilds it on the next command. On a
machine without bl, point the ledger driver at git's union merge
(git config merge.bl.driver "git merge-file --union -q %A %O %B"), then run
bl doctor --repair where bl is installed: it puts lines back in order and
drops duplicates.

Examples:

    bl init
    bl init --dir /srv/team/.backlog` + exitCodesHelp
}

func (c *InitCmd) Run(a *App) error {
	dir, worktree, err := initDir(a.Dir)
	if err != nil {
		return err
	}
	g := a.git
	if g == nil && inGitRepo(dir) {
		if g, err = a.needGit(initWhat); err != nil {
			return err
		}
	}
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
			return fmt.Errorf("set up the git merge driver: %w", err)
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
		if out.Merge != nil && out.Merge.Changed {
			fmt.Fprintf(w, "git merges the ledger by event: merge drivers set up in %s and %s\n", out.Merge.Attributes, out.Merge.Config)
		}
	})
}

const initWhat = "bl init in a git repository"

// gitWork: in a git repository, init sets up the merge drivers, which
// bl-git does.
func (c *InitCmd) gitWork(a *App) string {
	dir, _, err := initDir(a.Dir)
	if err != nil || !inGitRepo(dir) {
		return ""
	}
	return initWhat
}
