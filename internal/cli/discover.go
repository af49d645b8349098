package cli

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

const backlogDirName = ".backlog"

// findBacklog resolves the backlog directory: --dir / BL_DIR if given (the
// .backlog directory itself, or a directory holding one), else the nearest
// .backlog upward from the working directory. Inside a linked git worktree
// it is the main worktree's .backlog, so every worktree of a repository
// shares one ledger and one lock. A backlog whose files are links out of it
// is refused (ledger.CheckLinks), also for commands that read its files
// without opening it.
func findBacklog(flagDir string) (string, error) {
	dir, err := findBacklogDir(flagDir)
	if err != nil {
		return "", err
	}
	return dir, ledger.CheckLinks(dir)
}

func findBacklogDir(flagDir string) (string, error) {
	if flagDir != "" {
		dir, err := filepath.Abs(flagDir)
		if err != nil {
			return "", err
		}
		if isBacklog(dir) {
			return dir, nil
		}
		if sub := filepath.Join(dir, backlogDirName); isBacklog(sub) {
			return sub, nil
		}
		return "", ledger.Errorf(ledger.ErrNotInitialized, "%s holds no backlog (no %s)", dir, ledger.LedgerFile)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if main, ok := linkedWorktreeMain(d); ok {
			shared := filepath.Join(main, backlogDirName)
			if isBacklog(shared) {
				return shared, nil
			}
			return "", ledger.Errorf(ledger.ErrNotInitialized, "%s is a linked worktree of %s, which has no backlog", d, main)
		}
		if cand := filepath.Join(d, backlogDirName); isBacklog(cand) {
			return cand, nil
		}
		if filepath.Dir(d) == d {
			return "", ledger.Errorf(ledger.ErrNotInitialized, "no %s found in %s or any parent", backlogDirName, wd)
		}
	}
}

// isBacklog reports whether dir holds a ledger: a file, or a link that
// findBacklog then checks.
func isBacklog(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, ledger.LedgerFile))
	return err == nil && (fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0)
}

// initDir is where bl init creates the backlog: --dir if given, else the
// main worktree's root of the enclosing git repository, else the working
// directory. worktree is set when the working directory is a linked
// worktree, for the message that says where the shared backlog lives.
func initDir(flagDir string) (dir, worktree string, err error) {
	if flagDir != "" {
		dir, err = filepath.Abs(flagDir)
		return dir, "", err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if main, ok := linkedWorktreeMain(d); ok {
			return filepath.Join(main, backlogDirName), d, nil
		}
		if fi, err := os.Stat(filepath.Join(d, ".git")); err == nil && fi.IsDir() {
			return filepath.Join(d, backlogDirName), "", nil
		}
		if filepath.Dir(d) == d {
			return filepath.Join(wd, backlogDirName), "", nil
		}
	}
}

// linkedWorktreeMain reports whether dir is the root of a linked git
// worktree and, if so, the root of its main worktree. It reads the files git
// leaves behind rather than running git: dir/.git is a file
// "gitdir: <repo>/.git/worktrees/<name>", whose commondir file points at
// the shared <repo>/.git.
func linkedWorktreeMain(dir string) (string, bool) {
	gitFile := filepath.Join(dir, ".git")
	fi, err := os.Stat(gitFile)
	if err != nil || fi.IsDir() {
		return "", false
	}
	gitdir, err := readGitdir(gitFile)
	if err != nil {
		return "", false
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	common := gitdir
	if b, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitdir, c)
		}
		common = filepath.Clean(c)
	} else {
		return "", false // a submodule's .git file: not a linked worktree
	}
	if filepath.Base(common) != ".git" {
		return "", false // a bare repository has no main worktree
	}
	return filepath.Dir(common), true
}

func readGitdir(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "gitdir:"); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	return "", errors.New("not a gitdir file")
}
