//go:build !unix

package supervisor

import (
	"os"
	"os/exec"
)

// termSignal asks a command to stop; without process groups and signals
// this is a kill.
var termSignal os.Signal = os.Kill

func setProcAttr(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func signalNumber(*os.ProcessState) int { return 0 }
