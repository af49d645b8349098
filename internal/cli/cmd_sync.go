package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// SyncCmd commits the backlog and exchanges it with a git remote.
type SyncCmd struct {
	Message string `short:"m" placeholder:"TEXT" help:"Commit subject; the summary of events follows it."`
	Pull    bool   `help:"Fetch the remote branch and merge its backlog in."`
	Push    bool   `help:"Pull, then push; on a rejected push pull again and retry."`
	Remote  string `placeholder:"NAME" help:"Remote name, URL or path (default: sync.remote in config.json, else origin)."`
	Branch  string `placeholder:"BRANCH" help:"Branch to commit to and exchange (default: sync.branch in config.json, else the checked-out branch)."`
}

func (SyncCmd) Help() string {
	return `Without flags, commits .backlog (ledger, snapshot, archives, config,
.gitignore; never the lock or local files) to the current branch, as read
under the backlog lock so a half-written line is never committed. The
message names the cards that changed: "bl: created A5 A6; A1 claimed by
w1; A2 done".
Nothing changed is a quiet no-op. Works from any subdirectory. From a
linked git worktree it commits the backlog all worktrees share (the main
worktree's .backlog/) on the main worktree's branch, or sync.branch, not on
the branch checked out there, and says so once per worktree on stderr; the
worktree's own checked-out .backlog/ is a stale copy bl does not read.

--pull fetches the remote branch and merges its backlog in at the ledger
level: the remote's events keep their order and the local events that the
remote lacks go after them, so whatever the remote accepted first stays
first (a local claim that raced one already on the remote folds as a
recorded conflict). The result is committed with the fetched commit as a
second parent. A local card whose id the remote created too (both clones
ran bl create --id A4) gets a fresh generated id first, with every local
event that names it, and bl sync says so on stderr ("card A4 was also
created on origin; yours is now bl-..."; "renamed" in --json); exit 4
(id_collision), nothing changed, when a claim on it already went through
the remote's lease ref or a claim arbiter.

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
	g, err := a.needGit("bl sync")
	if err != nil {
		return err
	}
	a.syncWorktreeNote(c)
	b, err := a.Open()
	if err != nil {
		return err
	}
	cfg := b.Config().Sync
	if cfg.Board != "" {
		// Refused before any git work: a bad name changes nothing.
		if err := ledger.CheckBoardName(cfg.Board); err != nil {
			return err
		}
	}
	exchange := c.Pull || c.Push || c.Remote != "" || c.Branch != ""
	req := SyncRequest{Branch: firstOf(c.Branch, cfg.Branch), Message: c.Message, Actor: a.actor(), Now: a.now,
		BeforeCommit: a.boardWriter(b)}
	// git takes a branch named "b\u200b"; bl would print it as "b".
	if err := ledger.ValidName("branch", req.Branch); err != nil {
		return err
	}
	if exchange {
		req.Remote, req.Pull = firstOf(c.Remote, cfg.Remote, "origin"), c.Pull && !c.Push
		req.Tracked = c.Remote == ""
	}
	res, err := g.Sync(a.ctx, b, req)
	if err != nil {
		return err
	}
	syncNotes(a.Stderr, res)
	if res.GuessedAuthor {
		fmt.Fprintf(a.Stderr, "bl: committed as %s: git has no user.email here; set one with\n    git config --global user.email you@example.com\n", res.Author)
	}
	// Remember how much history this clone has seen, so bl doctor can
	// tell when a git revert or reset takes events out of the files.
	_ = b.RecordSeen()
	return a.emit(res, func(w io.Writer) { printSync(w, res, req.Remote) })
}

// syncNotes says on stderr, whatever the output format, which local cards
// a sync gave a fresh id (the id the user typed no longer names theirs)
// and which it found created on two clones.
func syncNotes(w io.Writer, res SyncResult) {
	for _, r := range res.Renamed {
		fmt.Fprintf(w, "bl: card %s was also created on %s; yours is now %s (%d local event(s) renamed)\n", r.From, res.Remote, r.To, r.Events)
	}
	for _, id := range res.CreatedTwice {
		fmt.Fprintf(w, "bl: warning: card %s was created on two clones and a git merge brought both creates here, so its events may belong to either card; bl doctor names them\n", id)
	}
}

// printSync is bl sync's human output: what was pulled, committed and
// pushed; remote is "" for a commit alone.
func printSync(w io.Writer, res SyncResult, remote string) {
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
		subject, _, _ := strings.Cut(res.Message, "\n")
		fmt.Fprintf(w, "committed %.12s on %s: %s\n", res.Commit, res.Branch, subject)
	case remote == "":
		fmt.Fprintln(w, "nothing to commit")
	}
	if res.Pushed {
		fmt.Fprintf(w, "%s %s is at %.12s", remote, res.Branch, res.Commit)
		if res.Tries > 1 {
			fmt.Fprintf(w, " (after %d tries)", res.Tries)
		}
		fmt.Fprintln(w)
	} else if remote != "" && !res.Committed && res.Pulled == 0 {
		fmt.Fprintln(w, "up to date")
	}
}

func (c *SyncCmd) gitWork(*App) string { return "bl sync" }

// syncWorktreeNote warns, once per linked worktree, that bl sync run there
// commits the backlog all worktrees share on the main worktree's branch
// (or the sync branch), not on the branch checked out there.
func (a *App) syncWorktreeNote(c *SyncCmd) {
	wt, ok := currentLinkedWorktree(a.Dir)
	if !ok {
		return
	}
	b, err := a.Open()
	if err != nil {
		return // the sync reports it
	}
	branch, why := c.Branch, "--branch"
	if branch == "" {
		branch, why = b.Config().Sync.Branch, "sync.branch in config.json"
	}
	if branch == "" {
		branch, why = worktreeBranch(wt.main), "the main worktree's branch"
	}
	if branch == wt.branch || !noteOnce(b.Dir(), wt.root) {
		return
	}
	fmt.Fprint(a.Stderr, syncWorktreeNote(wt, b.Dir(), branch, why))
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// autoSync runs sync.auto after a successful mutation: "commit" commits
// the backlog, "push" also exchanges it with sync.remote (origin), as bl
// sync and bl sync --push do; the lean bl runs bl-git sync for it. The
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
		var gm *gitMissingError
		if errors.As(err, &gm) {
			fmt.Fprintf(a.Stderr, "    %s\n", gm.Hint())
		}
	}
	if mode != "commit" && mode != "push" {
		warn(errors.New(`unknown value; use "off", "commit" or "push"`))
		return
	}
	if cfg.Board != "" {
		if err := ledger.CheckBoardName(cfg.Board); err != nil {
			warn(err)
			return
		}
	}
	var err error
	if a.ext.Git != nil {
		req := SyncRequest{Branch: cfg.Branch, Actor: a.actor(), Now: a.now, BeforeCommit: a.boardWriter(a.backlog)}
		if mode == "push" {
			req.Remote, req.Tracked = firstOf(cfg.Remote, "origin"), true
		}
		var res SyncResult
		res, err = a.ext.Git.Sync(a.ctx, a.backlog, req)
		syncNotes(a.Stderr, res)
	} else {
		err = a.autoSyncChild(mode == "push")
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
		if err := ledger.CheckBoardName(name); err != nil {
			return err
		}
		cards, err := b.List(ledger.Filter{}, ledger.SortClaim)
		if err != nil {
			return err
		}
		conflicts, err := cardConflicts(b, "")
		if err != nil {
			return err
		}
		// Named by the export that reproduces it, so CI can check it with
		// bl export --check .backlog/BOARD.md.
		waiting, err := waitingOn(b, cards)
		if err != nil {
			return err
		}
		board := export.RenderMarkdown(cards, export.Options{Command: "bl export --format markdown", WaitingOn: waiting, Conflicts: conflicts})
		return writeExportFile(filepath.Join(b.Dir(), name), board)
	}
}
