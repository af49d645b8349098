//go:build unix

package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// heldLock is a card's worktree lock: an flock on a file under the git
// directory. file is passed on to the command, so the lock stays held
// while the command or anything it started lives, however it got there.
type heldLock struct{ file *os.File }

// tryLockFile takes the lock at path without waiting, and writes holder
// into it; when another holds it, it returns nil and what that one wrote.
func tryLockFile(path, holder string) (*heldLock, string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, "", err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, "", err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		b := make([]byte, 512)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		return nil, string(b[:n]), nil
	}
	if err != nil {
		f.Close()
		return nil, "", err
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(holder), 0)
	}
	return &heldLock{file: f}, "", nil
}

// inherit is what the command inherits to keep the lock held.
func (l *heldLock) inherit() []*os.File { return []*os.File{l.file} }

func (l *heldLock) close() { l.file.Close() }
