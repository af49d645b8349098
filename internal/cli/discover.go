package cli

import (
	"os"
	"path/filepath"

	"github.com/bl-backlog/bl/gitdir"
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
	// A directory too (a submodule's checkout): CheckLinks names it.
	return err == nil && (fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0 || fi.IsDir())
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
// worktree and, if so, the root of its main worktree (see gitdir).
func linkedWorktreeMain(dir string) (string, bool) { return gitdir.LinkedMain(dir) }
