//go:build unix

package supervisor

import (
	"os"
	"syscall"
)

// termSignal asks a command to stop.
var termSignal os.Signal = syscall.SIGTERM

// signalGroup sends sig to the process group pgid.
func signalGroup(pgid int, sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok && pgid > 0 {
		_ = syscall.Kill(-pgid, s)
	}
}

// killGroup kills the process group pgid.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// killLeftovers kills what an exited command left in its process group.
func killLeftovers(pgid int) { killGroup(pgid) }

// signalNumber is the signal that ended the process, or 0.
func signalNumber(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal())
	}
	return 0
}

// signalNumberOf is sig's number, or 0.
func signalNumberOf(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}
