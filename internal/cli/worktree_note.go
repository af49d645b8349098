package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// A linked git worktree checks out its own copy of .backlog/ with the rest
// of the branch, but bl reads and writes the main worktree's backlog from
// every worktree (discover.go). The copy is stale by design; these say so
// where a person would otherwise be misled.

// linkedWorktree is the linked worktree the working directory is in.
type linkedWorktree struct {
	root   string // the linked worktree's root
	main   string // the main worktree's root
	branch string // the branch checked out in the linked worktree; "" when detached
}

// currentLinkedWorktree finds the linked worktree enclosing the working
// directory; ok is false outside one, and with --dir (the user named the
// backlog).
func currentLinkedWorktree(flagDir string) (wt linkedWorktree, ok bool) {
	if flagDir != "" {
		return wt, false
	}
	wd, err := os.Getwd()
	if err != nil {
		return wt, false
	}
	for d := wd; ; d = filepath.Dir(d) {
		if main, ok := linkedWorktreeMain(d); ok {
			return linkedWorktree{root: d, main: main, branch: worktreeBranch(d)}, true
		}
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil || filepath.Dir(d) == d {
			return wt, false
		}
	}
}

// staleCopy is the worktree's own checked-out .backlog/, if it has one.
func (wt linkedWorktree) staleCopy() string {
	p := filepath.Join(wt.root, backlogDirName)
	if isBacklog(p) {
		return p
	}
	return ""
}

// worktreeBranch is the branch checked out in the worktree at root, read
// from its HEAD; "" when detached or unreadable.
func worktreeBranch(root string) string {
	gitDir, _, err := gitdir.Dirs(root)
	if err != nil {
		return ""
	}
	f, err := os.Open(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ref: ")
	if !ok {
		return ""
	}
	return strings.TrimPrefix(ref, "refs/heads/")
}

// syncWorktreeNote is the warning bl sync prints from a linked worktree:
// it commits the shared backlog, on the main worktree's branch (or
// sync.branch), not on the branch checked out here.
func syncWorktreeNote(wt linkedWorktree, backlogDir, branch, why string) string {
	var b strings.Builder
	here := "this worktree's branch"
	if wt.branch != "" {
		here = wt.branch
	}
	fmt.Fprintf(&b, "bl: note: %s is a linked worktree: bl sync commits the backlog all worktrees share, %s,", wt.root, backlogDir)
	if branch != "" {
		fmt.Fprintf(&b, " on %s (%s), not on %s.", branch, why, here)
	} else {
		fmt.Fprintf(&b, " on the main worktree's branch, not on %s.", here)
	}
	if c := wt.staleCopy(); c != "" {
		fmt.Fprintf(&b, " The %s checked out here is a stale copy that bl neither reads nor updates.", c)
	}
	b.WriteString(" (Shown once per worktree.)\n")
	return b.String()
}

// worktreeNotedFile lists, in the shared backlog's local cache, the
// worktrees bl sync has explained itself to.
const worktreeNotedFile = "cache/worktree-notes"

// noteOnce reports whether the note for the worktree at root is still to
// be shown, and marks it shown. A failure to read or write the list only
// means the note is shown again.
func noteOnce(backlogDir, root string) bool {
	path := filepath.Join(backlogDir, filepath.FromSlash(worktreeNotedFile))
	if data, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if l == root {
				return false
			}
		}
	}
	if ledger.CheckLocalPath(backlogDir, worktreeNotedFile) != nil {
		return true // a link a teammate committed: never written through
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = fsutil.AppendSync(path, []byte(root+"\n")) // never through a link a teammate committed there
	}
	return true
}
