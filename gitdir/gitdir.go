// Package gitdir finds a git repository's directories from the files git
// leaves on disk, without running git or linking a git library: the lean
// bl uses it on every call to find the backlog a linked worktree shares,
// and gitsync to open the repository. It also runs the system git where bl
// needs it (Run, and Tracked on top of it), with one rule for a git
// hook's environment.
//
// bl reaches git through four packages, each for one thing: gitdir finds
// a repository's directories from the files git leaves on disk and is the
// one door to the system git (Run); internal/gitwork runs that git for a
// card's work (worktrees, branch heads, staged files); ledger/gitsync is
// the backlog's own traffic with git through go-git (commit, fetch,
// rebase, push, lease refs, the merge driver); internal/cli/gitcli is
// bl-git's commands on top of gitsync.
package gitdir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound: no .git at or above a directory.
var ErrNotFound = errors.New("gitdir: not inside a git worktree")

// Root is the nearest directory at or above dir that holds .git (a
// directory, a gitdir file or a link to either).
func Root(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%w: no .git at or above %s", ErrNotFound, dir)
		}
	}
}

// Dirs finds the git directory of the worktree at root (HEAD, index) and
// the common directory it shares with the other worktrees of its
// repository (refs, objects, config). In a main worktree both are
// root/.git. In a linked worktree root/.git is a file
// "gitdir: <repo>/.git/worktrees/<name>", whose commondir file points at
// the shared <repo>/.git; a submodule's gitdir has no commondir file, so
// its common directory is its git directory.
func Dirs(root string) (gitDir, commonDir string, err error) {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", "", err
	}
	gitDir = dotgit
	if !fi.IsDir() {
		if gitDir, err = readGitFile(dotgit); err != nil {
			return "", "", err
		}
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(root, gitDir)
		}
	}
	commonDir = gitDir
	if b, err := readRegular(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		commonDir = filepath.Clean(c)
	}
	return gitDir, commonDir, nil
}

// LinkedMain reports whether dir is the root of a linked git worktree and,
// if so, the root of its main worktree. A submodule (a .git file without
// a common directory) and a worktree of a bare repository (no main
// worktree) are not linked worktrees here.
func LinkedMain(dir string) (string, bool) {
	fi, err := os.Stat(filepath.Join(dir, ".git"))
	if err != nil || fi.IsDir() {
		return "", false
	}
	gitDir, common, err := Dirs(dir)
	if err != nil || common == gitDir || filepath.Base(common) != ".git" {
		return "", false
	}
	return filepath.Dir(common), true
}

// readGitFile reads the path a .git file names on its first line,
// "gitdir: <path>".
func readGitFile(path string) (string, error) {
	f, err := openRegular(path)
	if errors.Is(err, ErrUnsure) {
		return "", notRegular(path)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return "", fmt.Errorf("%s: empty .git file", path)
	}
	rest, ok := strings.CutPrefix(sc.Text(), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", path)
	}
	return strings.TrimSpace(rest), nil
}
