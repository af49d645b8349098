//go:build unix

package cli

import (
	"fmt"
	"os"
	"syscall"
)

// trustedDaemonDir checks the daemon socket's directory: a real directory
// (not a link), this user's, which no one else may enter. A socket there
// was made by this user; a directory git checked out (0755) or another
// user made is refused.
func trustedDaemonDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s is not yours: bl daemon uses a directory only its user may enter", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s may be entered by others (mode %v): bl daemon uses a directory only its user may enter (chmod 700)", dir, fi.Mode().Perm())
	}
	return nil
}

// dialDaemon connects to the daemon's socket. The lean bl links no
// network package: a unix socket is two system calls.
func dialDaemon(sock string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), sock), nil
}
