//go:build unix && !linux

package supervisor

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts the command in a process group of its own. These
// systems have no Pdeathsig: a command whose supervisor is killed runs on
// until it ends, and its result is not recorded (see the package doc).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
