//go:build unix

package cli

import "syscall"

// execBLGit replaces this process with bl-git at path, run with args: the
// process keeps its id, environment and standard streams, and its exit
// code is bl-git's. It returns only on failure.
func execBLGit(path string, args []string) error {
	argv := append([]string{path}, args...)
	return syscall.Exec(path, argv, handoverEnv())
}
