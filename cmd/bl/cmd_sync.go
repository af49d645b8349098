package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync"
)

// SyncCmd commits the backlog and exchanges it with a git remote.
type SyncCmd struct {
	Message string `short:"m" placeholder:"MSG" help:"Commit subject; the summary of events follows it."`
	Pull    bool   `help:"Fetch the remote branch and merge its backlog in."`
	Push    bool   `help:"Pull, then push; on a rejected push pull again and retry."`
	Remote  string `placeholder:"NAME" help:"Remote name, URL or path (default: sync.remote in config.json, else origin)."`
	Branch  string `placeholder:"B" help:"Branch to commit to and exchange (default: sync.branch in config.json, else the checked-out branch)."`
}

func (SyncCmd) Help() string {
	return `Without flags, commits .backlog (ledger, snapshot, archives, config,
.gitignore; never the lock or local files) to the current branch, as read
under the backlog lock so a half-written line is never committed. The
message counts what changed: "bl: 3 created, 2 claimed, 1 completed".
Nothing changed is a quiet no-op. Works from any worktree or subdirectory.

--pull fetches the remote branch and merges its backlog in at the ledger
level: the remote's events keep their order and the local events that the
remote lacks go after them, so whatever the remote accepted first stays
first (a local claim that raced one already on the remote folds as a
recorded conflict). The result is committed with the fetched commit as a
second parent.

--push does the same, then pushes with the fetched commit as the expected
old value, never forcing. When someone else pushed first, it fetches,
merges and tries again with a growing, jittered pause, up to 10 times.
--remote or --branch alone mean --push.

If the remote is unreachable the command fails with exit code 1 (--json
code "remote") and the local backlog is left as it was. If the remote
branch changed files outside .backlog that this branch lacks, bl does not
merge code: bring them in with git pull first, or exchange the backlog on
a branch of its own (--branch backlog, or sync.branch in config.json).

Examples:

    bl sync
    bl sync -m "triage"
    bl sync --pull
    bl sync --push
    bl sync --remote origin --branch backlog --json` + exitCodesHelp
}

func (c *SyncCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	cfg := b.Config().Sync
	exchange := c.Pull || c.Push || c.Remote != "" || c.Branch != ""
	remote := firstOf(c.Remote, cfg.Remote, "origin")
	if !exchange {
		remote = ""
	}
	s, err := gitsync.New(b, gitsync.Options{Remote: remote, Branch: firstOf(c.Branch, cfg.Branch), Message: c.Message, Actor: a.actor(), Now: a.now,
		BeforeCommit: a.boardWriter(b)})
	if err != nil {
		return err
	}
	var res gitsync.Result
	switch {
	case !exchange:
		res, err = s.Commit(a.ctx)
	case c.Pull && !c.Push:
		res, err = s.Pull(a.ctx)
	default:
		res, err = s.Push(a.ctx, gitsync.Hooks{})
	}
	if err != nil {
		return err
	}
	return a.emit(res, func(w io.Writer) {
		if res.Pulled > 0 {
			fmt.Fprintf(w, "pulled %d event(s) from %s %s", res.Pulled, remote, res.Branch)
			if res.Rebased > 0 {
				fmt.Fprintf(w, "; %d local event(s) now after them", res.Rebased)
			}
			if res.Conflicts > 0 {
				fmt.Fprintf(w, "; %d conflict(s) recorded (bl doctor lists them)", res.Conflicts)
			}
			fmt.Fprintln(w)
		}
		switch {
		case res.Committed:
			fmt.Fprintf(w, "committed %s %s\n", short(res.Commit), firstLine(res.Message))
		case !exchange:
			fmt.Fprintln(w, "nothing to commit")
		}
		if res.Pushed {
			fmt.Fprintf(w, "%s %s is at %s", remote, res.Branch, short(res.Commit))
			if res.Tries > 1 {
				fmt.Fprintf(w, " (after %d tries)", res.Tries)
			}
			fmt.Fprintln(w)
		} else if exchange && !res.Committed && res.Pulled == 0 {
			fmt.Fprintln(w, "up to date")
		}
	})
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// remoteFor is the remote a claim, heartbeat or complete goes through: the
// flag, else claims.remote in config.json, else none.
func remoteFor(b *ledger.Backlog, flag string) string {
	return firstOf(flag, b.Config().Claims.Remote)
}

// syncer opens the git side of a remote lease operation.
func (a *App) syncer(b *ledger.Backlog, remote string) (*gitsync.Syncer, error) {
	a.synced = true
	return gitsync.New(b, gitsync.Options{Remote: remote, Branch: b.Config().Sync.Branch, Actor: a.actor(), Now: a.now})
}

// claimRemote claims through the remote: the card is printed only once the
// push carrying the claim succeeded.
func claimRemote(a *App, b *ledger.Backlog, req ledger.ClaimRequest, remote string) (*ledger.Card, error) {
	s, err := a.syncer(b, remote)
	if err != nil {
		return nil, err
	}
	card, _, err := s.Claim(a.ctx, req)
	return card, err
}

// leaseRemote runs a heartbeat or completion through the remote: it is
// acknowledged only once the push carrying it succeeded.
func leaseRemote(a *App, b *ledger.Backlog, remote, requestID string, do func(rid string) (ledger.Card, error)) (ledger.Card, error) {
	s, err := a.syncer(b, remote)
	if err != nil {
		return ledger.Card{}, err
	}
	card, _, err := s.Lease(a.ctx, requestID, func(_ context.Context, rid string) (ledger.Card, error) { return do(rid) })
	return card, err
}

// autoSync runs sync.auto after a successful mutation: "commit" commits
// the backlog, "push" also exchanges it with sync.remote (origin). The
// mutation is durable already, so a failure here is a warning, not an
// error.
func (a *App) autoSync() {
	if a.backlog == nil || a.synced {
		return
	}
	cfg := a.backlog.Config().Sync
	mode := strings.ToLower(cfg.Auto)
	if mode == "" || mode == "off" {
		return
	}
	warn := func(err error) {
		fmt.Fprintf(a.Stderr, "bl: warning: sync.auto %s: %v\n", mode, err)
	}
	if mode != "commit" && mode != "push" {
		warn(errors.New(`unknown value; use "off", "commit" or "push"`))
		return
	}
	remote := ""
	if mode == "push" {
		remote = firstOf(cfg.Remote, "origin")
	}
	s, err := gitsync.New(a.backlog, gitsync.Options{Remote: remote, Branch: cfg.Branch, Actor: a.actor(), Now: a.now,
		BeforeCommit: a.boardWriter(a.backlog)})
	if err != nil {
		warn(err)
		return
	}
	if mode == "commit" {
		_, err = s.Commit(a.ctx)
	} else {
		_, err = s.Push(a.ctx, gitsync.Hooks{})
	}
	if err != nil {
		warn(err)
	}
}

// boardWriter returns the hook that regenerates the board file named by
// sync.board before a commit, or nil when none is configured.
func (a *App) boardWriter(b *ledger.Backlog) func(context.Context) error {
	name := b.Config().Sync.Board
	if name == "" {
		return nil
	}
	return func(context.Context) error {
		if !ledger.Tracked(name) || strings.ContainsAny(name, `/\`) {
			return usagef(fmt.Sprintf("sync.board %q must be a file name ending in .md inside the backlog directory, e.g. BOARD.md", name))
		}
		cards, err := b.List(ledger.Filter{}, ledger.SortClaim)
		if err != nil {
			return err
		}
		board := export.RenderMarkdown(cards, export.Options{Command: "bl sync"})
		return writeExportFile(filepath.Join(b.Dir(), name), board)
	}
}
