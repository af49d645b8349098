package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/internal/supervisor"
	"github.com/bl-backlog/bl/ledger"
)

// RunCmd is the supervisor: claim, run a command on the card, record the
// outcome.
type RunCmd struct {
	Owner   string        `help:"Lease owner (default: the actor)."`
	TTL     time.Duration `name:"ttl" default:"15m" placeholder:"DURATION" help:"Lease length; the lease is renewed every ttl/3 while the command runs."`
	ID      string        `name:"id" help:"Run on this card or fail, instead of the best one."`
	Phase   string        `help:"Only cards in this phase."`
	Label   string        `help:"Only cards with this label."`
	Wait    time.Duration `placeholder:"DURATION" help:"When nothing is claimable, wait up to this long for a card."`
	Loop    bool          `help:"Take the next card after each one, until none is claimable (or --wait runs out)."`
	Timeout time.Duration `placeholder:"DURATION" help:"Stop a command that runs longer than this on a card (SIGTERM, then SIGKILL after --grace) and fail the card: \"timed out after …\" (default: no limit)."`
	Grace   time.Duration `default:"10s" placeholder:"DURATION" help:"How long a command gets between SIGTERM and SIGKILL when it must stop."`
	Local   bool          `help:"Claim in this clone even when claims.remote names a git remote (bl run does not claim through one) or a claim arbiter is set (BL_ARBITER, .backlog/arbiter.json)."`

	Worktree     bool     `help:"Run each card's command in a git worktree of its own, on branch bl/<id> (worktree.branch in config.json), and record the branch and its head commit with the outcome."`
	Base         string   `placeholder:"REF" help:"With --worktree: start a new card branch from this ref (default HEAD)."`
	KeepWorktree bool     `name:"keep-worktree" help:"With --worktree: keep the worktree after a success too (it is always kept after a failure)."`
	Review       bool     `help:"On exit 0 send the card to review instead of done (also when config.json sets review.required)."`
	Command      []string `arg:"" optional:"" passthrough:"" name:"command" help:"The command to run and its arguments, after --."`
}

func (RunCmd) Help() string {
	return `The agent loop in one process. bl run claims a card (or, with --wait,
waits for one), starts the command in a process group of its own, with
these placeholders in its arguments replaced by the card's values:

    {id}        the card id
    {owner}     the lease owner
    {epoch}     the lease epoch
    {worktree}  the card's worktree (with --worktree only)

    bl run --owner agent-1 --loop -- claude -p "work on card {id}; bl show {id} has the details"

and the card in its environment, for scripts:

    BL_CARD       the card id
    BL_EPOCH      the lease epoch
    BL_OWNER      the lease owner
    BL_DIR        the backlog directory
    BL_CARD_JSON  a file holding the card as bl show --json prints it

and renews the lease every ttl/3 while the command lives. Then:

    exit 0           complete
    exit non-zero    fail, with the last lines of the command's stderr as the
                     reason: the attempt counts, the card backs off, and with
                     max-attempts used up it is blocked (see bl fail)
    --timeout        the command ran longer: its process group gets SIGTERM,
                     then SIGKILL after --grace, and the card fails with the
                     reason "timed out after …"
    lease lost       (a heartbeat is fenced: the supervisor was stopped past
                     its TTL and the card was claimed again) the command's
                     process group gets SIGTERM, then SIGKILL after --grace;
                     nothing is recorded
    SIGINT, SIGTERM  passed on to the command; if it then exits non-zero the
                     card is released, and bl run stops

Through a claim arbiter (--arbiter is not a bl run flag: BL_ARBITER or the
local .backlog/arbiter.json; --local goes around it) the claim, the
heartbeats and the outcome are decided by the arbiter over one connection
kept for the run. A heartbeat that fails (the arbiter is down or does not
answer) is tried again every ttl/10; if none succeeds, the command is
stopped as for a lost lease before the lease runs out: SIGTERM at the
lease's end less --grace and less ttl/10 (at most 10s), so that it is gone
before another machine may take the card. The same holds without an
arbiter when heartbeats keep failing, or one does not answer for ttl/3. An
outcome the arbiter cannot take (it is down) is tried again every ttl/10
while the lease lasts, or until SIGINT or SIGTERM (then exit 7).

Write the card as {id}, not $BL_CARD, on the bl run command line: your
shell expands "$BL_CARD" before bl run has claimed anything, so

    bl run -- sh -c "echo [$BL_CARD]"     runs  echo []    (and completes the card)
    bl run -- sh -c "echo [{id}]"         runs  echo [A1]

No shell touches {id}, in double quotes or single. bl pastes the value in
as text: ids and epochs are plain words, but pass a worktree path (which
may hold spaces) to sh -c as an argument: sh -c 'cd "$1" && make' _ {worktree}.
Other text in braces is left alone.

Nothing the command starts outlives bl run (Linux). bl run starts one
launcher, a second bl process that is a child subreaper: each command
starts under it, and whatever the command starts stays below it, in its
process group or out of it (setsid, double forks, orphans). When the
command exits, what it left running is killed (SIGKILL); when bl run ends
or is killed, even by SIGKILL, the launcher kills all of the run. If the
launcher is killed, the command dies with it and bl run kills what it
started. Only SIGKILL of both at once leaves processes behind. On macOS
and other systems: when the command exits, what it left in its process
group is killed, but what it moved out of the group is not, and if bl run
is SIGKILLed the command runs on (no subreaper, no Pdeathsig); its result
is not recorded and the card is claimed again once its lease runs out. On
Windows there are no process groups: a stopped command is killed, its
children are not. Claims, heartbeats and outcomes all go through one open
backlog: no process starts per step.

With --loop, config.json is taken again before each claim: a
review.required, worktree.branch or retry_backoff changed meanwhile (a
pull, an edit) holds for the next card, the card under way keeps its
settings, and a claims.remote that appears ends the loop (exit 2). A file
that does not read is named once; the last good settings stay.

Output: a line per card on stdout, progress on stderr. With --json, the
card as it stands afterwards (null when nothing was claimable), one line per
card with --loop; the command's own stdout then goes to stderr.

Exit status: without --loop, the command's (128+n if signal n ended it),
0 when nothing was claimable, 4 when the lease was lost. With --loop, 0 once
nothing is claimable. 128+n when signal n stopped bl run; the codes of bl's
own errors otherwise.

With --worktree each card gets a git worktree of the repository, under its
git directory (.git/bl-worktrees/<id>), on branch bl/<id>: made from HEAD
(or --base REF) the first time, the existing branch when the card comes
back (a reclaim, a reject), the worktree itself when an earlier run left it
(a crash). The command runs there, with {worktree}, BL_WORKTREE and
BL_BRANCH set. On exit 0 the branch and its head commit are recorded on the
card (commit, branch) and the worktree is removed (the branch stays) unless
--keep-worktree; on failure it is kept and the fail reason names it.

A card's worktree is locked while anything of its run lives: an flock on
.git/bl-worktree-locks/<id> that the command and all it starts inherit (as
file descriptor 3; leave it open). A second bl run on the card (its lease
was lost or taken back while the first run's processes still work) waits,
renewing its lease, and names the holder: "waiting for its worktree, in use
by agent-1 (epoch 1, bl run pid 4242 on host, since …)"; SIGINT gives the
card back. On Windows only bl run holds the lock, not the command. Your
own working tree and index are never touched, and no worktree that may hold
work is deleted: after exit 0 one with uncommitted changes, or on another
branch, is kept (bl run says so); a worktree in the card's way on another
branch (or a detached HEAD), or a directory there that is not a worktree,
is moved aside to .git/bl-worktrees-aside/<id>/<time> as it is, and bl run
says where. If it cannot be moved, bl run gives the card back and exits 1
(code worktree_kept).

Examples:

    bl run --owner agent-1 --ttl 10m --loop -- ./do-card.sh {id}
    bl run --owner agent-1 --loop --wait 30m --timeout 2h --json -- \
        claude -p "work on card {id} (epoch {epoch}): bl show {id} --json has it all"
    bl run --id A1 -- make test` + exitCodesHelp
}

func (c *RunCmd) Run(a *App) error {
	if err := c.checkArgs(); err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	if err := c.claimsHere(b); err != nil {
		return err
	}
	leases, err := a.runLeases(b, c.Local)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	cmdOut := a.Stdout
	if a.JSON {
		cmdOut = a.Stderr // stdout stays JSON
	}
	a.mutated = true
	o := c.options(a, b, cmdOut, sigs, leases)
	if c.Worktree {
		o.Worktree = &supervisor.WorktreeOptions{Branch: b.Config().Worktree.Branch, Base: c.Base, Keep: c.KeepWorktree}
	} else if c.Base != "" || c.KeepWorktree {
		return usagef("--base and --keep-worktree need --worktree")
	}
	o.Reload = c.reload(a, b)
	var emitErr error
	// Hooks run as the events happen, not all at the end of a long loop.
	o.Claimed = func(ledger.Card) { a.runHooksAfter() }
	o.Done = func(supervisor.Result) { a.runHooksAfter() }
	if c.Loop {
		o.Done = emitEach(a, &emitErr)
	}
	// The ledger writes do not stop at the first signal: it is passed on
	// to the command, and its outcome is still recorded.
	sum, err := supervisor.Run(context.WithoutCancel(a.ctx), o)
	if err != nil {
		return err
	}
	if emitErr != nil {
		return emitErr
	}
	return c.report(a, sum)
}

// claimsHere refuses a backlog whose claims go through a git remote
// (without --local): bl run's claims would not be acknowledged by the
// remote the other clones claim through, and a claim it granted wins.
func (c *RunCmd) claimsHere(b *ledger.Backlog) error {
	if remote := b.Config().Claims.Remote; remote != "" && !c.Local {
		return usagef(fmt.Sprintf("this backlog's claims go through the git remote %s (claims.remote), and bl run claims in this clone only: pass --local if every worker of this backlog runs on this machine", remote))
	}
	return nil
}

// reload is the supervisor's Reload: before each card after the first,
// config.json as it stands then (settings.go), held to the rules the start
// holds it to, gives the next card its review gate, worktree branch and
// retry backoff. A remote for claims pulled in ends the loop before it
// claims. The lease connection (arbiter.json, BL_ARBITER) stays the one
// made at the start; its claims are picked on the new settings.
func (c *RunCmd) reload(a *App, b *ledger.Backlog) func(o *supervisor.Options) error {
	cur := b
	note := func(msg string) { fmt.Fprintf(a.Stderr, "bl run: %s\n", msg) }
	return func(o *supervisor.Options) error {
		nb := Reloaded(cur, a.Warn, note)
		if nb == cur {
			return nil
		}
		cur = nb
		if err := c.claimsHere(nb); err != nil {
			return err
		}
		a.backlog = nb
		o.Backlog = nb
		if l, ok := o.Leases.(arbiterLeases); ok {
			// Its picks are made on the backlog's settings too.
			l.b = nb
			o.Leases = l
		}
		o.Review = c.Review || nb.Config().Review.Required
		if o.Worktree != nil {
			wt := *o.Worktree
			wt.Branch = nb.Config().Worktree.Branch
			o.Worktree = &wt
		}
		return nil
	}
}

// checkArgs checks the command line before the backlog is opened: a
// command after --, no negative durations, {worktree} only with
// --worktree.
func (c *RunCmd) checkArgs() error {
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	} else if len(c.Command) > 0 && strings.HasPrefix(c.Command[0], "-") {
		// Not after "--": a flag bl run does not know, not a command.
		return usagef(fmt.Sprintf("unknown flag %s (the command goes after --: bl run [flags] -- CMD [ARGS])", c.Command[0]))
	}
	if len(c.Command) == 0 {
		return usagef("bl run needs a command: bl run [flags] -- CMD [ARGS]")
	}
	if err := checkTTL(c.TTL); err != nil {
		return err
	}
	if c.Wait < 0 || c.Grace < 0 || c.Timeout < 0 {
		return usagef("--wait, --grace and --timeout cannot be negative")
	}
	if !c.Worktree && slices.ContainsFunc(c.Command[1:], func(arg string) bool { return strings.Contains(arg, supervisor.PlaceholderWorktree) }) {
		return usagef(supervisor.PlaceholderWorktree + " needs --worktree: without it the command runs in the current directory")
	}
	return nil
}

// options are the supervisor's options from the flags and the backlog's
// config; cmdOut takes the command's stdout.
func (c *RunCmd) options(a *App, b *ledger.Backlog, cmdOut io.Writer, sigs chan os.Signal, leases supervisor.Leases) supervisor.Options {
	return supervisor.Options{Backlog: b, Actor: a.actor(), Owner: a.Owner(c.Owner), TTL: c.TTL, ID: c.ID, Phase: c.Phase,
		Label: c.Label, Wait: c.Wait, Loop: c.Loop, Grace: c.Grace, Timeout: c.Timeout, Command: c.Command,
		Stdin: a.Stdin, Stdout: cmdOut, Stderr: a.Stderr, Signals: sigs,
		Review: c.Review || b.Config().Review.Required, Contain: true, Leases: leases}
}

// emitEach prints each card as its run ends (--loop), after its hooks;
// the first error printing is kept in emitErr.
func emitEach(a *App, emitErr *error) func(supervisor.Result) {
	return func(r supervisor.Result) {
		a.runHooksAfter()
		var err error
		if a.JSON {
			err = a.emitLine(r.Card)
		} else {
			err = a.emit(r.Card, func(w io.Writer) { fmt.Fprintf(w, "%s %s\n", r.Outcome, a.cardLine(r.Card)) })
		}
		if *emitErr == nil {
			*emitErr = err
		}
	}
}

// report prints what became of the card (the loop printed each as it
// ended) and gives the exit status: the command's on a failure, 128+n
// when a signal n stopped bl run, a conflict when the lease was lost.
func (c *RunCmd) report(a *App, sum supervisor.Summary) error {
	if !c.Loop {
		if sum.Last == nil {
			if err := a.emit(nil, func(w io.Writer) { fmt.Fprintln(w, "nothing claimable") }); err != nil {
				return err
			}
		} else {
			r := sum.Last
			if r.Outcome == supervisor.Fenced {
				return ledger.Errorf(ledger.ErrFenced, "lost the lease on %s while the command ran: it was stopped (or its result dropped); nothing was recorded", r.Card.ID)
			}
			if err := a.emit(r.Card, func(w io.Writer) { fmt.Fprintf(w, "%s %s\n", r.Outcome, a.cardLine(r.Card)) }); err != nil {
				return err
			}
			if r.Signal == nil && r.ExitCode != 0 {
				return &exitStatusError{code: r.ExitCode, msg: fmt.Sprintf("the command exited with status %d on %s", r.ExitCode, r.Card.ID)}
			}
		}
	}
	if sig, ok := sum.Interrupted.(syscall.Signal); ok {
		return &exitStatusError{code: 128 + int(sig), msg: fmt.Sprintf("stopped by %s", sig), interrupted: true}
	}
	return nil
}

// emitLine prints a card as --json does, on one line: one line per card of
// a bl run --loop.
func (a *App) emitLine(c ledger.Card) error {
	var buf, line bytes.Buffer
	out := a.Stdout
	a.Stdout = &buf
	err := a.emit(c, nil)
	a.Stdout = out
	if err != nil {
		return err
	}
	if err := json.Compact(&line, buf.Bytes()); err != nil {
		return err
	}
	_, err = a.Stdout.Write(append(line.Bytes(), '\n'))
	return err
}
