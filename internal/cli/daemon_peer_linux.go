package cli

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// peerIsMe reports whether the listener at the other end of the connected
// unix socket fd runs as this user (SO_PEERCRED), and its process id.
func peerIsMe(fd int) (pid int, ok bool) {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return 0, false
	}
	return int(cred.Pid), int(cred.Uid) == os.Getuid()
}

// daemonStopped reports whether process pid is stopped (SIGSTOP, ^Z), as
// /proc tells.
func daemonStopped(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}
