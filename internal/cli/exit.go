package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/bl-backlog/bl/internal/gitwork"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/lock"
)

// Exit codes, documented in bl --help.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
	exitConflict = 4
	exitLock     = 5
	exitCorrupt  = 6
)

// usageError is bad input caught by the CLI before the ledger sees it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(msg string) error { return &usageError{msg: msg} }

// hinted gives an error a hint of its own, in place of its code's.
type hinted struct {
	error
	hint string
}

func (h hinted) Unwrap() error { return h.error }
func (h hinted) Hint() string  { return h.hint }

// exitStatusError ends bl with a given exit status: bl run passes on its
// command's, or 128+n after signal n.
type exitStatusError struct {
	code        int
	msg         string
	interrupted bool
}

func (e *exitStatusError) Error() string { return e.msg }

// classify is the one place that maps an error to an exit code and a stable
// code string for --json consumers. git, when linked in, names the codes of
// its own errors.
func classify(err error, git Git) (exit int, code string) {
	var ue *usageError
	var ge *gitMissingError
	var le *ledger.LinkError
	var xe *exitStatusError
	var ae *ambiguousIDError
	var ad ArbiterDown
	switch {
	case errors.As(err, &ue):
		return exitUsage, "usage"
	case errors.As(err, &ae):
		return exitUsage, "ambiguous_id"
	case errors.As(err, &ad) && ad.ArbiterDown():
		return exitArbiter, "arbiter"
	case errors.As(err, &xe) && xe.interrupted:
		return xe.code, "interrupted"
	case errors.As(err, &xe):
		return xe.code, "command_failed"
	case errors.Is(err, ledger.ErrInvalid):
		return exitUsage, "invalid"
	case errors.Is(err, ledger.ErrNotInitialized):
		return exitNotFound, "no_backlog"
	case errors.Is(err, ledger.ErrNotFound):
		return exitNotFound, "not_found"
	case errors.Is(err, ledger.ErrFenced):
		return exitConflict, "fenced"
	case errors.Is(err, ledger.ErrPathsHeld):
		return exitConflict, "paths_held"
	case errors.Is(err, ledger.ErrSelfReview):
		return exitConflict, "self_review"
	case errors.Is(err, ledger.ErrIDCollision):
		return exitConflict, "id_collision"
	case errors.Is(err, ledger.ErrConflict):
		return exitConflict, "conflict"
	case errors.Is(err, lock.ErrTimeout):
		return exitLock, "lock_timeout"
	case errors.As(err, &le):
		return exitCorrupt, "symlink"
	case errors.Is(err, ledger.ErrVersion):
		return exitCorrupt, "unsupported_version"
	case errors.Is(err, ledger.ErrCorrupt):
		return exitCorrupt, "corrupt"
	case errors.Is(err, ledger.ErrNetworkFS):
		return exitError, "network_fs"
	case git != nil && git.ErrorCode(err) != "":
		return exitError, git.ErrorCode(err)
	case errors.As(err, &ge):
		return exitError, "no_git"
	case errors.Is(err, gitwork.ErrWorktreeKept):
		return exitError, "worktree_kept"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return exitError, "interrupted"
	}
	return exitError, "error"
}

// hint is the "what to do next" sentence for an error class.
func hint(code string) string {
	switch code {
	case "no_backlog":
		return "run `bl init` in the repository, or point --dir / BL_DIR at a .backlog directory"
	case "fenced":
		return "your lease is gone: stop work on this card and claim again"
	case "id_collision":
		return "another clone created a card with this id: use the id the message names; bl doctor lists cards created on two clones"
	case "self_review":
		return "your work stands: a reviewer with another actor (--actor / BL_ACTOR) and owner approves or rejects it"
	case "lock_timeout":
		return "another bl process holds .backlog/lock; retry, or raise --lock-timeout"
	case "corrupt":
		return "run `bl doctor` to see the damage; do not edit ledger.jsonl by hand"
	case "unsupported_version":
		return "this backlog was written by a newer bl; upgrade bl"
	case "remote":
		return "check the remote's name and URL (git remote -v) and the network; nothing local was lost"
	case "diverged":
		return "the commands after \"run:\" merge with git and push; run them as printed"
	case "arbiter":
		return "check that the arbiter runs (nats-server -js) and its address (--arbiter, BL_ARBITER, .backlog/arbiter.json); retry with the same --request-id"
	case "worktree_kept":
		return "bl run never deletes a worktree that may hold work: finish or move it yourself (git worktree move), then run again"
	case "interrupted":
		return "stopped by a signal (SIGINT or SIGTERM) before it finished; bl log shows what was recorded"
	case "no_git":
		return "bl sync and bl diff need the backlog inside a git repository (git init)"
	case "not_found":
		return "bl search WORDS finds a card by words of its title; bl list shows the ids (an id may be shortened to a unique prefix of 4 characters or more)"
	}
	return ""
}

// exitCodesHelp ends every command's --help.
// exitCodesHelp ends each command's help text; the exit codes themselves
// are printed once, after the flags (printHelp).
const exitCodesHelp = ""

// exitCodesLine is the exit codes in one line, for a command's help.
const exitCodesLine = `
Exit codes: 0 ok, 1 other failure, 2 invalid input, 3 not found, 4 conflict
or fenced, 5 lock timeout, 6 corrupt backlog, 7 claim arbiter unreachable.`

// fail reports err on stderr, as text or as a JSON object, and returns its
// exit code.
func (a *App) fail(err error) int {
	exit, code := classify(err, a.ext.Git)
	msg := err.Error()
	h := hint(code)
	var eh interface{ Hint() string }
	if errors.As(err, &eh) {
		h = eh.Hint()
	}
	if a.JSON {
		writeJSONLine(a.Stderr, struct {
			Error    string `json:"error"`
			Code     string `json:"code"`
			ExitCode int    `json:"exit_code"`
			Hint     string `json:"hint,omitempty"`
		}{msg, code, exit, h})
		return exit
	}
	fmt.Fprintf(a.Stderr, "bl: %s\n", text(msg))
	if h != "" {
		fmt.Fprintf(a.Stderr, "    %s\n", h)
	}
	return exit
}

// Warn prints a warning on stderr (the ledger's, or a command's). Under --json it is a
// JSON object, so stderr stays machine-readable.
func (a *App) Warn(msg string) {
	if a.JSON {
		writeJSONLine(a.Stderr, struct {
			Warning string `json:"warning"`
		}{msg})
		return
	}
	fmt.Fprintf(a.Stderr, "bl: warning: %s\n", text(msg))
}
