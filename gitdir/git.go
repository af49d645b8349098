package gitdir

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNoGit: the git binary is not on PATH.
var ErrNoGit = errors.New("git is not installed")

// hookVars are what git sets for a hook to name its repository, work tree
// and index. A bl command a hook runs (a pre-commit hook of a linked
// worktree has GIT_DIR and GIT_INDEX_FILE set) must not hand them to the
// git it runs: the backlog's directory is not the hook's work tree, and git
// would answer about another tree or index than the one bl asks about.
var hookVars = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"}

// Run runs the system git with args in dir and returns its standard
// output, trimmed of the final newline; a failure is an *Error carrying
// git's standard error. It is the one door bl runs git through (package
// gitwork's worktrees and staged files, Tracked), with one rule for the
// environment: this process's, without the variables a git hook sets
// (hookVars), and without git's optional locks, so that bl run from a
// hook asks git what it asks from a shell, and a git command of the user's
// never waits on bl's.
func Run(ctx context.Context, dir string, args ...string) (string, error) {
	return RunIndex(ctx, dir, "", args...)
}

// RunIndex is Run reading the index file index instead of the
// repository's own ("" for its own): bl paths check in a pre-commit hook
// asks what the commit in progress stages, which git commit -a keeps in an
// index of its own (HookIndex).
func RunIndex(ctx context.Context, dir, index string, args ...string) (string, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", ErrNoGit
	}
	if err := CheckFiles(dir); err != nil {
		return "", err // git would block on it
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = env(os.Environ(), index)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", &Error{Args: args, Stderr: strings.TrimSpace(errb.String()), Err: err}
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// HookIndex is the index a git hook's commit uses (GIT_INDEX_FILE, made
// absolute from the hook's directory, where git runs it), or "" outside a
// hook.
func HookIndex() string {
	index := os.Getenv("GIT_INDEX_FILE")
	if index == "" {
		return ""
	}
	if abs, err := filepath.Abs(index); err == nil {
		return abs
	}
	return index
}

// env is the environment of a git bl runs: vars without hookVars and with
// optional locks off, and GIT_INDEX_FILE=index when index is set.
func env(vars []string, index string) []string {
	out := vars[:0:0]
	for _, kv := range vars {
		if k, _, _ := strings.Cut(kv, "="); k == "GIT_OPTIONAL_LOCKS" || slices.Contains(hookVars, k) {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "GIT_OPTIONAL_LOCKS=0")
	if index != "" {
		out = append(out, "GIT_INDEX_FILE="+index)
	}
	return out
}

// Error is a git command that failed.
type Error struct {
	Args   []string
	Stderr string // trimmed
	Err    error  // an *exec.ExitError when git ran and exited non-zero
}

func (e *Error) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return "git " + strings.Join(e.Args, " ") + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is git's exit status, -1 when it did not run to an exit.
func (e *Error) ExitCode() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
