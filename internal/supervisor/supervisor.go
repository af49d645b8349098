// Package supervisor runs a command on claimed cards: bl run. It claims a
// card (or waits for one), starts the command in a process group of its
// own with the card in its environment, renews the lease while the command
// lives, and records the outcome: complete on exit status 0, fail with the
// last lines of the command's stderr otherwise. All of it goes through one
// open ledger.Backlog, so no process starts per step.
//
// One card goes through these states:
//
//	claimed ─ start ─> running ─┬─ exit 0 ──────────────> completed (complete)
//	                            ├─ exit ≠ 0 ────────────> failed    (fail: backoff, max attempts)
//	                            ├─ timeout ─────────────> failed    (TERM, grace, KILL; "timed out after …")
//	                            ├─ heartbeat fenced ────> fenced    (TERM, grace, KILL; nothing recorded)
//	                            └─ SIGINT/SIGTERM ──────> interrupted: the signal is passed on;
//	                                                      exit 0 → completed, else released
//
// A complete or fail refused as fenced (the lease was lost while the
// command ran) also ends as fenced: the command's result is not recorded.
//
// Nothing the command starts outlives the supervisor on Linux: with
// Options.Contain each command starts under a launcher process, a child
// subreaper that kills all the command left when it exits and all of the
// run when the supervisor goes (see launcher_linux.go). On other systems
// the command runs in a process group of its own and what it leaves in
// that group is killed when it exits; if the supervisor is killed outright
// the command runs on until it ends, and its result is not recorded: the
// lease runs out and the card is claimed again (the work runs at least
// once, possibly twice). With Worktree, a card's worktree is locked while
// anything of its run lives (the command inherits the lock), so a second
// run of the card waits for the first to be gone.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/watch"
)

// DefaultGrace is how long a command gets between SIGTERM and SIGKILL.
const DefaultGrace = 10 * time.Second

// Backlog is what a supervisor does to a backlog (a *ledger.Backlog): claim
// (waiting, through watch.Claim), heartbeat, read the card, and end the
// lease as the command ended.
type Backlog interface {
	watch.Claimer
	Get(id string) (ledger.Card, error)
	Heartbeat(ctx context.Context, r ledger.HeartbeatRequest) (ledger.Card, error)
	Complete(ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error)
	Fail(ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error)
	Submit(ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error)
	Release(ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error)
}

// Options configure a supervisor.
type Options struct {
	Backlog Backlog
	Actor   string // who writes the events
	Owner   string // the lease owner
	TTL     time.Duration
	ID      string // claim this card only
	Phase   string
	Label   string
	Wait    time.Duration // wait this long for a claimable card
	Loop    bool          // take the next card until none is claimable
	Grace   time.Duration // between TERM and KILL; DefaultGrace when 0
	Timeout time.Duration // stop a command running longer (TERM, Grace, KILL) and fail its card; 0 = none

	Command []string // the program and its arguments
	Stdin   io.Reader
	Stdout  io.Writer // the command's standard output
	Stderr  io.Writer // the command's standard error, and the supervisor's messages

	// Signals are interrupts to pass on to the command (SIGINT, SIGTERM).
	Signals <-chan os.Signal
	// Done is called after each card with what became of it.
	Done func(Result)
	// Claimed is called once a card is claimed, before its command
	// starts, outside the lock (bl run runs the claim's hooks there).
	Claimed func(ledger.Card)

	// Worktree, when set, runs each card's command in a git worktree of
	// its own on the card's branch (see worktreeFor), and records the
	// branch and its head commit with the outcome.
	Worktree *WorktreeOptions
	// Review sends a card whose command exited 0 to review instead of
	// done.
	Review bool
	// Reload, when set, is called before each claim after the first: it
	// may change the options the next card runs with (bl run takes a
	// changed config.json), or end the run with its error, claiming
	// nothing. A card runs to its outcome with the options it was claimed
	// under.
	Reload func(o *Options) error
	// Leases makes the claims and lease writes; nil makes them on Backlog
	// itself. bl run through a claim arbiter passes the arbiter's, which
	// records each write in Backlog once the arbiter took it.
	Leases Leases

	// Contain keeps everything the command starts from outliving the
	// supervisor (Linux: the launcher and subreapers, see launcher_linux.go;
	// elsewhere it changes nothing). bl run sets it; it makes this process
	// a child subreaper, which a test binary should not be.
	Contain bool
}

// Leases makes a supervisor's claims and lease writes.
type Leases interface {
	// Claim claims req, waiting up to wait for a card; nil: none.
	Claim(ctx context.Context, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error)
	Heartbeat(ctx context.Context, req ledger.HeartbeatRequest) (ledger.Card, error)
	// Write makes the lease write op (Backlog's Complete, Submit, Fail
	// or Release) of req.
	Write(ctx context.Context, req ledger.LeaseRequest, op func(context.Context, ledger.LeaseRequest) (ledger.Card, error)) (ledger.Card, error)
}

// local makes the lease writes on the backlog itself.
type local struct{ b Backlog }

func (l local) Claim(ctx context.Context, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error) {
	return watch.Claim(ctx, l.b, req, wait)
}

func (l local) Heartbeat(ctx context.Context, req ledger.HeartbeatRequest) (ledger.Card, error) {
	return l.b.Heartbeat(ctx, req)
}

func (l local) Write(ctx context.Context, req ledger.LeaseRequest, op func(context.Context, ledger.LeaseRequest) (ledger.Card, error)) (ledger.Card, error) {
	return op(ctx, req)
}

// Outcome is how a card's run ended.
type Outcome string

// The outcomes.
const (
	Completed   Outcome = "completed"      // exit 0: the card is done
	Reviewed    Outcome = "sent to review" // exit 0 with Review: the card waits for a reviewer
	Failed      Outcome = "failed"         // exit ≠ 0: the card failed its attempt
	Fenced      Outcome = "fenced"         // the lease was lost: the command was stopped, nothing recorded
	Interrupted Outcome = "interrupted"    // a signal was passed on and the command failed: the card was released
)

// Result is what became of one card.
type Result struct {
	Card     ledger.Card // as it stands after the run
	Outcome  Outcome
	ExitCode int           // the command's, 128+n when killed by signal n
	Signal   os.Signal     // the interrupt passed on, if any
	Took     time.Duration // how long the command ran
}

// Summary is what a supervisor did.
type Summary struct {
	Runs        int       // cards the command ran on
	Last        *Result   // the last card's result; nil when none was claimable
	Interrupted os.Signal // the signal that stopped the supervisor, if any
}

// Reason limits: a fail's reason holds the last stderr lines, at most this
// many lines and bytes.
const (
	reasonLines = 20
	reasonBytes = 2 << 10
)

// Run claims and runs cards until, without Loop, one card is done, or,
// with Loop, none is claimable (after waiting up to Wait). An error is one
// from the backlog (a lock timeout, damage) or a command that cannot be
// started; what a command does is reported in the results.
func Run(ctx context.Context, o Options) (Summary, error) {
	var sum Summary
	if len(o.Command) == 0 {
		return sum, errors.New("no command to run")
	}
	if _, err := exec.LookPath(o.Command[0]); err != nil {
		return sum, ledger.Errorf(ledger.ErrInvalid, "command %q: %v", o.Command[0], err)
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Leases == nil {
		o.Leases = local{o.Backlog}
	}
	dir, err := filepath.Abs(o.Backlog.Dir())
	if err != nil {
		return sum, err
	}
	s := &supervisor{o: o, dir: dir}
	defer func() {
		if s.launch != nil {
			s.launch.close()
		}
	}()
	for first := true; ; first = false {
		if !first && o.Reload != nil {
			if err := s.reload(); err != nil {
				return sum, err
			}
		}
		card, sig, err := s.claim(ctx)
		if err != nil || card == nil {
			sum.Interrupted = sig
			return sum, err
		}
		if o.Claimed != nil {
			o.Claimed(*card)
		}
		res, err := s.run(ctx, *card)
		if err != nil {
			return sum, err
		}
		sum.Runs++
		sum.Last = &res
		if o.Done != nil {
			o.Done(res)
		}
		if res.Signal != nil {
			sum.Interrupted = res.Signal
			return sum, nil
		}
		if !o.Loop || o.ID != "" {
			return sum, nil
		}
	}
}

type supervisor struct {
	o      Options
	dir    string
	launch *launcher // started at the first command, with Contain
	repo   string    // the repository's work tree and git common dir,
	common string    // with Worktree (see gitDirs)
}

// reload runs Options.Reload; lease writes made on the backlog itself
// follow it to the backlog it gives.
func (s *supervisor) reload() error {
	_, own := s.o.Leases.(local)
	if err := s.o.Reload(&s.o); err != nil {
		return err
	}
	if own {
		s.o.Leases = local{s.o.Backlog}
	}
	return nil
}

func (s *supervisor) logf(format string, args ...any) {
	fmt.Fprintf(s.o.Stderr, "bl run: "+format+"\n", args...)
}

// claim takes the next card, waiting as Options say. A signal, pending or
// arriving while it waits, ends it with no card.
func (s *supervisor) claim(ctx context.Context) (*ledger.Card, os.Signal, error) {
	select {
	case sig := <-s.o.Signals:
		return nil, sig, nil
	default:
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, got := make(chan struct{}), make(chan os.Signal, 1)
	if s.o.Signals != nil && s.o.Wait > 0 {
		go func() {
			defer close(got)
			select {
			case sig := <-s.o.Signals:
				got <- sig
				cancel()
			case <-stop:
			}
		}()
	} else {
		close(got)
	}
	req := ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: s.o.Actor}, Owner: s.o.Owner, TTL: s.o.TTL,
		ID: s.o.ID, Phase: s.o.Phase, Label: s.o.Label}
	card, err := s.o.Leases.Claim(wctx, req, s.o.Wait)
	close(stop)
	if sig := <-got; sig != nil {
		if card != nil {
			s.giveBack(ctx, *card, fmt.Sprintf("interrupted (%s) before the command started", sig))
		}
		return nil, sig, nil
	}
	return card, nil, err
}

// run runs the command on a claimed card and records its outcome.
func (s *supervisor) run(ctx context.Context, card ledger.Card) (res Result, err error) {
	res.Card = card
	s.logf("claimed %s epoch %d: %s", card.ID, card.ClaimEpoch, oneLine(card.Title))
	cardFile, err := writeCardFile(&card)
	if err != nil {
		s.giveBack(ctx, card, "bl run could not write the card file")
		return res, err
	}
	defer os.Remove(cardFile)

	var tree *cardTree
	var inherit []*os.File
	if s.o.Worktree != nil {
		lk, t, stopped, err := s.prepareTree(ctx, card)
		if lk == nil {
			if stopped != nil {
				return *stopped, nil
			}
			return res, err
		}
		// The lock is held until the outcome is recorded and the
		// worktree removed: a second run of the card waits for all of it.
		defer lk.close()
		if err != nil {
			return res, err
		}
		tree, inherit = t, lk.inherit()
	}

	sp, tail := s.commandSpec(card, cardFile, tree, inherit)
	start := time.Now()
	cmd, err := s.start(sp)
	if err != nil {
		s.giveBack(ctx, card, "bl run could not start the command: "+err.Error())
		return res, fmt.Errorf("start %s: %w", s.o.Command[0], err)
	}

	w := s.watchLease(ctx, card)
	defer w.close()
	ex, timedOut, lost := s.wait(cmd, w, &res)
	if lost {
		return s.lostRun(cmd, res, card, start), nil
	}
	res.Took = time.Since(start)
	res.ExitCode = ex.code
	// The outcome is written even if ctx ended: the command's work is done.
	wctx := context.WithoutCancel(ctx)
	lease, op := s.outcome(wctx, card, &res, ex, timedOut, tree, tail.String())
	c, err := s.record(wctx, w, lease, op)
	if errors.Is(err, ledger.ErrFenced) {
		return s.fencedAtEnd(card, res, ex, err), nil
	}
	if err != nil {
		return res, err
	}
	res.Card = c
	s.removeTree(wctx, card, tree, res.Outcome)
	s.logOutcome(card, res, ex, timedOut, lease.Reason, c)
	return res, nil
}

// prepareTree locks the card's worktree and makes it (Options.Worktree).
// It gives no lock when the run ends before it starts: a signal or a
// lost lease while it waits for the lock (stopped), or an error, with the
// card given back. With the lock and an error, the caller closes the lock.
func (s *supervisor) prepareTree(ctx context.Context, card ledger.Card) (*heldLock, *cardTree, *Result, error) {
	repo, common, err := s.gitDirs(ctx)
	if err != nil {
		s.giveBack(ctx, card, "bl run could not make the card's worktree: "+err.Error())
		return nil, nil, nil, err
	}
	lk, stopped, err := s.lockTree(ctx, card, common)
	if err != nil || lk == nil {
		if stopped != nil {
			return nil, nil, stopped, nil
		}
		s.giveBack(ctx, card, "bl run could not lock the card's worktree: "+err.Error())
		return nil, nil, nil, err
	}
	tree, err := s.worktreeFor(ctx, card, repo, common)
	if err != nil {
		s.giveBack(ctx, card, "bl run could not make the card's worktree: "+err.Error())
		return lk, nil, nil, err
	}
	how := "made"
	if tree.Reused {
		how = "reused"
	}
	s.logf("%s: worktree %s on branch %s (%s)", card.ID, tree.Dir, tree.Branch, how)
	return lk, tree, nil, nil
}

// commandSpec is the command as it runs on card: its arguments expanded,
// the card in its environment (BL_CARD, BL_CARD_JSON, …), in the card's
// worktree if it has one. Its stderr goes on to Options.Stderr through
// tail, which keeps the last lines for a fail's reason.
func (s *supervisor) commandSpec(card ledger.Card, cardFile string, tree *cardTree, inherit []*os.File) (spec, *tail) {
	tail := newTail(s.o.Stderr, reasonLines, reasonBytes)
	sp := spec{name: s.o.Command[0], stdin: s.o.Stdin, stdout: s.o.Stdout, stderr: tail, inherit: inherit}
	wtDir := ""
	if tree != nil {
		wtDir = tree.Dir
	}
	sp.args = expandArgs(s.o.Command[1:], card.ID, card.ClaimOwner, card.ClaimEpoch, wtDir)
	sp.env = append(os.Environ(),
		"BL_CARD="+card.ID,
		"BL_EPOCH="+strconv.FormatInt(card.ClaimEpoch, 10),
		"BL_OWNER="+card.ClaimOwner,
		"BL_DIR="+s.dir,
		"BL_CARD_JSON="+cardFile,
	)
	if tree != nil {
		sp.dir = tree.Dir
		sp.env = append(sp.env, "BL_WORKTREE="+tree.Dir, "BL_BRANCH="+tree.Branch)
	}
	return sp, tail
}

// stop ends the command's process group: SIGTERM, then SIGKILL if it has
// not exited after the grace period. It returns how the command ended.
func (s *supervisor) stop(p *proc) exitInfo {
	signalGroup(p.pid, termSignal)
	t := time.NewTimer(s.o.Grace)
	defer t.Stop()
	select {
	case ex := <-p.done:
		return ex
	case <-t.C:
	}
	killGroup(p.pid)
	return <-p.done
}

// start starts the command: under the launcher when Contain asks for it
// (and this system has one), else as a child of this process.
func (s *supervisor) start(sp spec) (*proc, error) {
	if !s.o.Contain || !containSupported {
		return startDirect(sp)
	}
	if s.launch != nil {
		select {
		case <-s.launch.exited: // killed: start another
			s.launch = nil
		default:
		}
	}
	if s.launch == nil {
		l, err := newLauncher()
		if err != nil {
			return nil, err
		}
		s.launch = l
	}
	return s.launch.start(sp)
}

// lockTree takes the card's worktree lock. While another run of the card
// holds it (the command of an earlier lease, or anything that command
// started, still lives) it waits, naming the holder, and renews the lease.
// A signal or a lost lease ends the wait: then it returns no lock and the
// run's result.
func (s *supervisor) lockTree(ctx context.Context, card ledger.Card, common string) (*heldLock, *Result, error) {
	path := filepath.Join(common, "bl-worktree-locks", card.ID)
	host, _ := os.Hostname()
	me := fmt.Sprintf("%s (epoch %d, bl run pid %d on %s, since %s)", card.ClaimOwner, card.ClaimEpoch, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	lk, holder, err := tryLockFile(path, me)
	if lk != nil || err != nil {
		return lk, nil, err
	}
	s.logf("%s: waiting for its worktree, in use by %s", card.ID, oneLine(holder))
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	ttl := time.Duration(card.ClaimTTLSeconds) * time.Second
	beat := time.NewTicker(max(ttl/3, 100*time.Millisecond))
	defer beat.Stop()
	hb := ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: s.o.Actor}, ID: card.ID, Owner: card.ClaimOwner, Epoch: card.ClaimEpoch}
	for {
		select {
		case <-poll.C:
			if lk, _, err := tryLockFile(path, me); lk != nil || err != nil {
				if lk != nil {
					s.logf("%s: the worktree is free", card.ID)
				}
				return lk, nil, err
			}
		case <-beat.C:
			if _, err := s.o.Leases.Heartbeat(ctx, hb); errors.Is(err, ledger.ErrFenced) {
				s.logf("lost the lease on %s while waiting for its worktree (%v); nothing recorded", card.ID, err)
				res := Result{Card: card, Outcome: Fenced, ExitCode: -1}
				if cur, gerr := s.o.Backlog.Get(card.ID); gerr == nil {
					res.Card = cur
				}
				return nil, &res, nil
			}
		case sig := <-s.o.Signals:
			s.giveBack(ctx, card, fmt.Sprintf("interrupted (%s) while waiting for the card's worktree", sig))
			res := Result{Card: card, Outcome: Interrupted, Signal: sig, ExitCode: 128 + signalNumberOf(sig)}
			if cur, gerr := s.o.Backlog.Get(card.ID); gerr == nil {
				res.Card = cur
			}
			s.logf("%s released: interrupted (%s) while waiting for its worktree", card.ID, sig)
			return nil, &res, nil
		}
	}
}

// giveBack releases a card the command never ran on.
func (s *supervisor) giveBack(ctx context.Context, card ledger.Card, reason string) {
	_, err := s.o.Leases.Write(context.WithoutCancel(ctx), ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: s.o.Actor},
		ID: card.ID, Owner: card.ClaimOwner, Epoch: card.ClaimEpoch, Reason: reason}, s.o.Backlog.Release)
	if err != nil {
		s.logf("release of %s failed: %v", card.ID, err)
	}
}

// writeCardFile writes the card's JSON to a temporary file for the command.
func writeCardFile(c *ledger.Card) (string, error) {
	data, ok := export.AppendCardJSON(nil, c, true)
	if !ok {
		return "", fmt.Errorf("card %s does not encode", c.ID)
	}
	f, err := os.CreateTemp("", "bl-card-*.json")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// exitCode is the command's exit status, 128+n when a signal n ended it.
func exitCode(ps *os.ProcessState, waitErr error) int {
	if ps == nil {
		return 1
	}
	if n := signalNumber(ps); n > 0 {
		return 128 + n
	}
	if code := ps.ExitCode(); code >= 0 {
		if code == 0 && waitErr != nil {
			return 1 // exited 0 but its output could not be copied
		}
		return code
	}
	return 1
}

func describeExit(ps *os.ProcessState, waitErr error) string {
	if ps == nil {
		if waitErr != nil {
			return waitErr.Error()
		}
		return "did not run"
	}
	return ps.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
