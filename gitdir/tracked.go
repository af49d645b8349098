package gitdir

import (
	"context"
	"errors"
	"path/filepath"
)

// Tracked reports whether git tracks the file name in dir. Outside any git
// repository nothing is tracked. Inside one it asks the system git
// (git ls-files, through Run), and returns an error when that cannot be
// told: git missing, or refusing the repository (owned by someone else).
func Tracked(ctx context.Context, dir, name string) (bool, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		if _, err := Root(abs); errors.Is(err, ErrNotFound) {
			return false, nil
		}
	}
	_, err = Run(ctx, dir, "ls-files", "--error-unmatch", "--", name)
	var gerr *Error
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNoGit):
		return false, errors.New("git is not installed to tell whether it tracks the file")
	case errors.As(err, &gerr) && gerr.ExitCode() == 1:
		return false, nil // --error-unmatch: not tracked
	}
	return false, err
}
