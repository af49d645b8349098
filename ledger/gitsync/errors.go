package gitsync

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/bl-backlog/bl/ledger"
)

var (
	// ErrNoRepo: the backlog is not inside a git repository.
	ErrNoRepo = errors.New("no git repository")
	// ErrRemote: the remote could not be reached, refused the exchange,
	// or kept rejecting the push. The local backlog holds everything it
	// held before.
	ErrRemote = errors.New("remote")
	// ErrDiverged: the branch and the remote's both changed files outside
	// the backlog, which only git can merge.
	ErrDiverged = errors.New("diverged")
	// ErrGitLocked: a git lock file (ref or index) stayed taken.
	ErrGitLocked = errors.New("git lock busy")
	// ErrDetached: HEAD is detached and no branch was named.
	ErrDetached = errors.New("detached HEAD")
)

// NotAFileError: a commit holds a backlog file as something else than a
// file. A symbolic link's blob is the name of its target and a
// submodule's entry names a commit of another repository, so reading
// either as the file would take a path for ledger lines or fail without
// naming the commit. It is damage of a committed file (ledger.ErrCorrupt,
// exit 6), whichever command reads the commit.
type NotAFileError struct {
	Commit plumbing.Hash
	Path   string // in the repository, slash separated
	Mode   filemode.FileMode
}

func (e *NotAFileError) Error() string {
	what := "something else than a file"
	switch e.Mode {
	case filemode.Symlink:
		what = "a symbolic link"
	case filemode.Submodule:
		what = "a submodule"
	}
	return fmt.Sprintf("commit %.12s holds %s as %s (git mode %06o), not as a file", e.Commit, e.Path, what, uint32(e.Mode))
}

func (e *NotAFileError) Is(target error) bool { return target == ledger.ErrCorrupt }

// Hint is what to do next (the command line prints it under the error).
func (e *NotAFileError) Hint() string {
	return fmt.Sprintf("bl reads no backlog file through a link or a submodule: commit the file itself (git rm --cached %s, then git add the file), or compare other commits", e.Path)
}

// isFile reports whether a tree entry of mode is a file's content.
func isFile(mode filemode.FileMode) bool {
	return mode == filemode.Regular || mode == filemode.Executable || mode == filemode.Deprecated
}

// RemoteError is a failed exchange with a remote.
type RemoteError struct {
	Remote string // name or URL
	Op     string // "fetch" or "push"
	Err    error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s %s %s: %v; the local backlog keeps everything it had", e.Op, direction(e.Op), remoteName(e.Remote), e.Err)
}

// remoteName is the remote as a message names it: quoted when it holds a
// control character, which the terminal would otherwise drop or act on
// ("or\x1bigin" must not read as origin).
func remoteName(r string) string {
	if strings.IndexFunc(r, unicode.IsControl) >= 0 {
		return strconv.Quote(r)
	}
	return r
}

func direction(op string) string {
	if op == "push" {
		return "to"
	}
	return "from"
}

func (e *RemoteError) Unwrap() error { return e.Err }

func (e *RemoteError) Is(target error) bool { return target == ErrRemote }

// rejected reports whether a push failed because the remote's branch
// moved: the remote is reachable and a fresh fetch, merge and push may
// succeed. go-git and git-receive-pack word this several ways, not always
// with an exported error value.
func rejected(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	if refused(msg) {
		return false
	}
	for _, s := range []string{
		"non-fast-forward", "required to be", "but is absent", "fetch first", "stale info",
		"failed to update ref", "cannot lock ref", "failed to lock", "reference already exists",
		"command error on", "rejected",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// refused reports whether a push error (lower-cased) is the remote saying
// no for good: a hook declined it, the branch is protected, or this user
// may not push. Another round would get the same answer, so the push
// fails at once with the remote's words.
func refused(msg string) bool {
	for _, s := range []string{
		"hook declined", "protected branch", "permission", "denied", "not allowed", "forbidden",
		"unauthorized", "authentication", "read-only", "read only",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
