//go:build unix

package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/bl-backlog/bl/ledger"
)

// makeDaemonDir makes the socket's directory (0700), or takes the one
// there if it is a directory of this user's. A link is refused before
// anything follows it: the clone's files can make one (a tracked symlink).
func makeDaemonDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || !ownedByMe(fi) {
		return ledger.Errorf(ledger.ErrInvalid, "%s is not a directory of yours (bl daemon does not follow a link): remove it", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	return trustedDaemonDir(dir)
}

func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// trustedDaemonDir checks the daemon socket's directory: a real directory
// (not a link), this user's, which no one else may enter. A socket there
// was made by this user; a directory git checked out (0755) or another
// user made is refused.
func trustedDaemonDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !ownedByMe(fi):
		return fmt.Errorf("%s is not yours: bl daemon uses a directory only its user may enter", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s may be entered by others (mode %v): bl daemon uses a directory only its user may enter (chmod 700)", dir, fi.Mode().Perm())
	}
	return nil
}

// dialDaemon connects to the daemon's socket: a socket of this user's,
// not a link (the clone's files can make the path one), whose listener
// runs as this user where the system tells (peerIsMe), and its process
// id when the system tells (else 0). The lean bl links no network package:
// a unix socket is two system calls.
func dialDaemon(sock string) (*os.File, int, error) {
	fi, err := os.Lstat(sock)
	if err != nil {
		return nil, 0, err
	}
	if fi.Mode().Type() != fs.ModeSocket || !ownedByMe(fi) {
		return nil, 0, fmt.Errorf("%s is not a socket of yours", sock)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, 0, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		syscall.Close(fd)
		return nil, 0, err
	}
	pid, ok := peerIsMe(fd)
	if !ok {
		syscall.Close(fd)
		return nil, 0, fmt.Errorf("%s is served by another user", sock)
	}
	// Non-blocking, so that a read can give up on a stopped daemon.
	_ = syscall.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), sock), pid, nil
}
