package main

import (
	"fmt"
	"io"

	"github.com/bl-backlog/bl/ledger"
)

// InitCmd creates a backlog.
type InitCmd struct{}

func (InitCmd) Help() string {
	return `Creates .backlog/ at the root of the repository (the main worktree's root
inside a linked git worktree, so all worktrees share it), or at --dir.
Existing files are kept: running init twice is safe.

Commit .backlog/ledger.jsonl, config.json and .gitignore; the lock file
and *.broken files stay local.

Examples:

    bl init
    bl init --dir /srv/team/.backlog` + exitCodesHelp
}

func (c *InitCmd) Run(a *App) error {
	dir, worktree, err := initDir(a.Dir)
	if err != nil {
		return err
	}
	created, err := ledger.Init(dir)
	if err != nil {
		return err
	}
	out := struct {
		Dir      string `json:"dir"`
		Created  bool   `json:"created"`
		Worktree string `json:"worktree,omitempty"`
	}{dir, created, worktree}
	return a.emit(out, func(w io.Writer) {
		if created {
			fmt.Fprintf(w, "initialized backlog in %s\n", dir)
		} else {
			fmt.Fprintf(w, "backlog already initialized in %s\n", dir)
		}
		if worktree != "" {
			fmt.Fprintf(w, "%s is a linked worktree: it shares the backlog of the main worktree, %s\n", worktree, dir)
		}
	})
}
