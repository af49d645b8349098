package gitdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Tracked reports whether git tracks the file name in dir. Outside any git
// repository nothing is tracked. Inside one it asks the system git
// (git ls-files), and returns an error when that cannot be told: git
// missing, or refusing the repository (owned by someone else).
func Tracked(ctx context.Context, dir, name string) (bool, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		if _, err := Root(abs); errors.Is(err, ErrNotFound) {
			return false, nil
		}
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return false, errors.New("git is not installed to tell whether it tracks the file")
	}
	cmd := exec.CommandContext(ctx, git, "-C", dir, "ls-files", "--error-unmatch", "--", name)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil // --error-unmatch: not tracked
	}
	return false, fmt.Errorf("git ls-files: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
}
