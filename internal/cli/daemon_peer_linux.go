package cli

import (
	"os"
	"syscall"
)

// peerIsMe reports whether the listener at the other end of the connected
// unix socket fd runs as this user (SO_PEERCRED).
func peerIsMe(fd int) bool {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	return err == nil && int(cred.Uid) == os.Getuid()
}
