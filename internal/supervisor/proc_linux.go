package supervisor

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts the command in a process group of its own, so that
// a terminal's Ctrl-C reaches the supervisor, which passes it on, and the
// supervisor can stop everything the command started. The kernel kills the
// command if the supervisor dies (Pdeathsig), even by SIGKILL; what the
// command started is the launcher's to kill (Options.Contain).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
