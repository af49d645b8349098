//go:build !unix

package supervisor

import (
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// heldLock is a card's worktree lock. Here (LockFileEx) the command does
// not inherit it: it is held while the supervisor runs the card.
type heldLock struct{ fl *flock.Flock }

// tryLockFile takes the lock at path without waiting, and writes holder
// beside it; when another holds it, it returns nil and what that one wrote.
func tryLockFile(path, holder string) (*heldLock, string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, "", err
	}
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, "", err
	}
	if !ok {
		b, _ := os.ReadFile(holderPath(path))
		return nil, string(b), nil
	}
	if os.MkdirAll(filepath.Dir(holderPath(path)), 0o755) == nil {
		_ = os.WriteFile(holderPath(path), []byte(holder), 0o644)
	}
	return &heldLock{fl: fl}, "", nil
}

func (l *heldLock) inherit() []*os.File { return nil }

func (l *heldLock) close() { _ = l.fl.Unlock() }

// holderPath is where the holder of the lock at path is written (a card id
// never starts with a dot).
func holderPath(path string) string {
	return filepath.Join(filepath.Dir(path), ".holders", filepath.Base(path))
}
