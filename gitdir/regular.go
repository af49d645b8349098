package gitdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// A FIFO (or a device, a socket) where git keeps a file (.git/config,
// HEAD, a ref, the index) blocks whoever opens it: git itself, go-git,
// and a plain open in bl, in a system call no signal handler can end. bl
// opens git's files with openRegular (O_NONBLOCK, then regular files
// only), and CheckFiles refuses such a repository before the system git
// or go-git reads it, so a command ends with NotRegularError (exit 1)
// instead of hanging. MayBlock marks what may still block past that
// check (a FIFO swapped in after it): a signal then ends the process.

// NotRegularError is a file of the git repository that is not a regular
// file: git, and bl, would block reading it.
type NotRegularError struct {
	Path string
	Kind string // "FIFO", "device", "socket"
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file: git would block reading it, and bl does not open it; replace it with git's own file", e.Path, e.Kind)
}

// notRegular is the error for path, a file found not regular.
func notRegular(path string) error {
	kind := "special file"
	if fi, err := os.Stat(path); err == nil {
		kind = irregularKind(fi.Mode())
	}
	return &NotRegularError{Path: path, Kind: kind}
}

// irregularKind names a mode that blocks or never ends a read; "" for the
// others (a regular file, a directory: git reports those itself).
func irregularKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "device"
	case m&fs.ModeIrregular != 0:
		return "special file"
	}
	return ""
}

// CheckFiles refuses, with a *NotRegularError, the git repository around
// dir when one of the files git reads on every command (the .git file,
// commondir, config, config.worktree, HEAD, the branch it names, the
// index, packed-refs) is a FIFO, a device or a socket. Outside git, or
// where a file is missing, it says nothing: git reports those. It only
// stats (links followed, as git follows them), so it never blocks.
func CheckFiles(dir string) error {
	root, err := Root(dir)
	if err != nil {
		return nil
	}
	if err := checkFile(filepath.Join(root, ".git")); err != nil {
		return err
	}
	gitDir, commonDir, err := Dirs(root)
	if err != nil {
		var nr *NotRegularError
		if errors.As(err, &nr) {
			return err
		}
		return nil
	}
	files := []string{filepath.Join(gitDir, "commondir"), filepath.Join(gitDir, "HEAD"), filepath.Join(gitDir, "index"),
		filepath.Join(gitDir, "config.worktree"), filepath.Join(commonDir, "config"), filepath.Join(commonDir, "packed-refs")}
	for _, f := range files {
		if err := checkFile(f); err != nil {
			return err
		}
	}
	if b, err := readRegular(filepath.Join(gitDir, "HEAD")); err == nil {
		if ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: "); ok && filepath.IsLocal(ref) {
			return checkFile(filepath.Join(commonDir, filepath.FromSlash(ref)))
		}
	}
	return nil
}

// CheckRef is CheckFiles' rule for the loose ref name ("refs/remotes/
// origin/main") of the repository whose common directory is commonDir.
func CheckRef(commonDir, name string) error {
	if !filepath.IsLocal(name) {
		return nil
	}
	return checkFile(filepath.Join(commonDir, filepath.FromSlash(name)))
}

// checkFile is CheckFiles' rule for one path.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if kind := irregularKind(fi.Mode()); kind != "" {
		return &NotRegularError{Path: path, Kind: kind}
	}
	return nil
}

// blocking counts the calls in MayBlock; interrupted is set once a
// signal asked the command to stop (Interrupt).
var (
	blocking    atomic.Int32
	interrupted atomic.Bool
)

// ErrInterrupted: MayBlock was not entered, as a signal asked the command
// to stop. A type, not fmt.Errorf: the lean bl runs no initialiser for it.
var ErrInterrupted error = interruptedError{}

type interruptedError struct{}

func (interruptedError) Error() string { return "interrupted: " + context.Canceled.Error() }
func (interruptedError) Unwrap() error { return context.Canceled }

// MayBlock runs fn, an open or read of the repository that may block in a
// system call (go-git opening the repository, which CheckFiles cannot
// make safe against a file swapped in after it): a signal while it runs
// ends the process (Interrupt), and after one it does not start.
func MayBlock(fn func() error) error {
	blocking.Add(1)
	defer blocking.Add(-1)
	if interrupted.Load() {
		return ErrInterrupted
	}
	return fn()
}

// Interrupt records that a signal asked the command to stop, and reports
// whether a call may be blocked in MayBlock now: then only ending the
// process ends it.
func Interrupt() (blocked bool) {
	interrupted.Store(true)
	return blocking.Load() > 0
}
