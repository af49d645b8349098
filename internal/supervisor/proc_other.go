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

func signalGroup(pid int, sig os.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(sig)
	}
}

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// killLeftovers: no process groups here, and the pid may be reused.
func killLeftovers(int) {}

func signalNumber(*os.ProcessState) int { return 0 }

func signalNumberOf(os.Signal) int { return 0 }
