package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/gitdir"
)

// The lean bl leaves git out: linking git costs every call milliseconds of
// start-up. A command that needs git is handed to bl-git, the same command
// line with git built in, before it reads or writes anything: bl-git
// replaces the bl process (same arguments, environment and standard
// streams, so the caller sees bl-git's output and exit code). sync.auto,
// which follows a mutation bl already made, runs bl-git sync as a child.

// BLGitEnv names the bl-git binary to hand over to, overriding the search.
const BLGitEnv = "BL_GIT"

// handedOverEnv marks a process started by a hand-over. A lean bl that
// finds it set was itself started as bl-git, and refuses to hand over
// again rather than loop.
const handedOverEnv = "BL_HANDED_OVER"

// handoverVersionEnv carries the version of the bl that handed over, so
// bl-git can say when the two come from different builds.
const handoverVersionEnv = "BL_HANDOVER_VERSION"

// installHint says how to get bl-git: the module is not on a proxy, so
// only a checkout builds it.
const installHint = "bl-git is built with bl: run `make install` in a checkout of bl (it puts bl and bl-git in ~/.local/bin), or set BL_GIT to the path of a bl-git"

// handoverEnv is the environment bl-git runs in after a hand-over.
func handoverEnv() []string {
	return append(os.Environ(), handedOverEnv+"=1", handoverVersionEnv+"="+binaryVersion())
}

// checkHandoverVersion warns, in bl-git, when the bl that handed the
// command over is of another version: a stale bl-git next to a new bl (or
// the reverse) runs older code than the user thinks.
func checkHandoverVersion(args []string, stderr io.Writer) {
	from := os.Getenv(handoverVersionEnv)
	os.Unsetenv(handoverVersionEnv)
	if from == "" || from == binaryVersion() {
		return
	}
	a := &App{Stderr: stderr}
	a.JSON = hasJSONFlag(args)
	a.Warn(fmt.Sprintf("bl %s handed this command to bl-git %s, a different version; install both from one build (make install in a bl checkout)", from, binaryVersion()))
}

// gitCommand is a command that may need git. gitWork says what, for the
// parsed command line, needs bl-git ("bl sync"), or "" for nothing.
type gitCommand interface {
	gitWork(a *App) string
}

// gitMissingError is git work the lean bl cannot hand over: bl-git is not
// installed, or could not be started.
type gitMissingError struct {
	what   string // what needs git: "bl sync"
	detail string // why it cannot run
}

func (e *gitMissingError) Error() string {
	return fmt.Sprintf("%s needs bl-git (bl with git built in), %s", e.what, e.detail)
}

func (e *gitMissingError) Hint() string { return installHint }

// errHandedBack: this bl was started by a hand-over, so the bl-git it was
// handed to is a plain bl.
func errHandedBack(what string) error {
	return &gitMissingError{what, "but the bl-git it was handed to (" + BLGitEnv + ", next to bl or on PATH) is a plain bl"}
}

// handover replaces this process with bl-git running the same command
// line. It returns only when that cannot happen.
func (a *App) handover(what string) error {
	if os.Getenv(handedOverEnv) != "" {
		return errHandedBack(what)
	}
	if a.relayable {
		if code, ok := a.relay(); ok {
			panic(exitRequest{code}) // runApp returns it
		}
	}
	path, err := findBLGit()
	if err != nil {
		return &gitMissingError{what, err.Error()}
	}
	if err := execBLGit(path, a.args); err != nil {
		return &gitMissingError{what, fmt.Sprintf("which did not start: %v", err)}
	}
	return nil
}

// blGitName is bl-git's file name.
func blGitName() string {
	if runtime.GOOS == "windows" {
		return "bl-git.exe"
	}
	return "bl-git"
}

// findBLGit locates bl-git: $BL_GIT when set, else bl-git in the
// directory of this executable (as the system reports it, then as it was
// invoked), else bl-git on PATH. The error completes "needs bl-git, ".
func findBLGit() (string, error) {
	exe, _ := os.Executable()
	return lookupBLGit(os.Getenv(BLGitEnv), exe, os.Args[0], exec.LookPath)
}

func lookupBLGit(env, exe, arg0 string, lookPath func(string) (string, error)) (string, error) {
	if env != "" {
		p := env
		if !strings.ContainsRune(env, filepath.Separator) && !strings.ContainsRune(env, '/') {
			if lp, err := lookPath(env); err == nil {
				p = lp
			}
		}
		if !isExecutable(p) {
			return "", fmt.Errorf("but %s=%s is not an executable file", BLGitEnv, env)
		}
		return p, nil
	}
	var dirs []string
	if exe != "" {
		dirs = append(dirs, filepath.Dir(exe))
	}
	if strings.ContainsRune(arg0, '/') || strings.ContainsRune(arg0, filepath.Separator) {
		if d, err := filepath.Abs(filepath.Dir(arg0)); err == nil && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, blGitName()); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := lookPath(blGitName()); err == nil {
		return p, nil
	}
	where := "on PATH"
	if len(dirs) > 0 {
		where = "in " + strings.Join(dirs, " or ") + " or on PATH"
	}
	return "", fmt.Errorf("which was not found %s", where)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0
}

// inGitRepo reports whether dir, which need not exist yet, is inside a git
// worktree: whether .git is at or above it, as gitsync looks for it. Both
// the path as given and the path with symbolic links resolved are tried,
// since handing over when in doubt is never wrong.
func inGitRepo(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return true // let bl-git decide
	}
	return dotGitAbove(abs) || dotGitAbove(resolveExisting(abs))
}

func dotGitAbove(dir string) bool {
	_, err := gitdir.Root(dir)
	return err == nil
}

// resolveExisting resolves the symbolic links of the longest existing
// leading part of path and appends the rest.
func resolveExisting(path string) string {
	rest := ""
	for d := path; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(d) == d {
			return path
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// claimsRemote is the remote claims.remote in the backlog's config.json
// names, read without opening the backlog (and kept for Open); "" when
// there is none or the backlog or its config cannot be read (the command
// itself then reports that, the same way in bl and in bl-git).
func (a *App) claimsRemote() string {
	cfg, err := a.config()
	if err != nil {
		return ""
	}
	return cfg.Claims.Remote
}

// remoteWork is gitWork for claim, heartbeat and complete: a remote from
// the flag or claims.remote means git.
func (a *App) remoteWork(cmd string, rc remoteChoice) string {
	if rc.check() != nil {
		return "" // the command itself says why
	}
	if s, err := a.arbiterSettings(rc); err != nil || s.URL != "" {
		a.relayable = err == nil
		return arbiterWhat(cmd, s.URL) // bl-git reports a bad setting
	}
	remote := rc.remote(a.claimsRemote())
	if remote == "" {
		return ""
	}
	return remoteWhat(cmd, remote)
}

func remoteWhat(cmd, remote string) string {
	return fmt.Sprintf("bl %s through the git remote %s", cmd, remote)
}

// autoSyncChild is sync.auto in the lean bl: bl-git sync [--push] on the
// backlog just written, as the same actor. Its error, if any, is the one
// bl-git reported.
func (a *App) autoSyncChild(push bool) error {
	what := "committing the backlog"
	if push {
		what = "pushing the backlog"
	}
	if os.Getenv(handedOverEnv) != "" {
		return errHandedBack(what)
	}
	if a.relayable {
		if code, ok := a.relay(); ok {
			panic(exitRequest{code}) // runApp returns it
		}
	}
	path, err := findBLGit()
	if err != nil {
		return &gitMissingError{what, err.Error()}
	}
	args := []string{"sync", "--json", "--dir", a.backlog.Dir(), "--actor", a.actor(), "--lock-timeout", a.LockTimeout.String()}
	if push {
		args = append(args, "--push")
	}
	cmd := exec.CommandContext(a.ctx, path, args...)
	cmd.Env = handoverEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	// An interrupted bl interrupts the sync the way it would its own.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err = runChild(cmd, what)
	var res SyncResult
	if json.Unmarshal(out.Bytes(), &res) == nil {
		syncNotes(a.Stderr, res)
	}
	return err
}

// runChild runs a bl-git child (a sync, a webhook delivery) for what, and
// returns the error it reported: its --json error object, else its
// stderr; a child that did not start means bl-git is missing or unusable.
func runChild(cmd *exec.Cmd, what string) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return &gitMissingError{what, fmt.Sprintf("which did not start: %v", err)}
		}
		return err
	}
	out := bytes.TrimSpace(stderr.Bytes())
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(out, &e) == nil && e.Error != "" {
		return errors.New(e.Error)
	}
	if len(out) > 0 {
		return errors.New(strings.TrimPrefix(string(out), "bl: "))
	}
	return fmt.Errorf("%s: %v", cmd.Path, err)
}
