//go:build unix

package hooks

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts a hook in its own process group and makes a
// timeout kill the whole group, so a shell's children die with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
