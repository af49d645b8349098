//go:build !unix

package cli

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
)

// execBLGit runs bl-git at path with args in place of this process, where
// a process cannot be replaced: bl-git gets the environment and standard
// streams, and this process exits with bl-git's exit code. It returns only
// when bl-git did not start.
func execBLGit(path string, args []string) error {
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = handoverEnv()
	// An interrupt reaches bl-git too; bl-git decides how to end.
	signal.Ignore(os.Interrupt)
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		signal.Reset(os.Interrupt)
		return err
	}
	os.Exit(0)
	return nil
}
