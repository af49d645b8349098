// Package lock is the OS-level mutual exclusion used by every writer of a
// backlog: an advisory flock(2) on a dedicated file that is never deleted.
//
// It knows nothing about cards or ledgers. Waiting is bounded and jittered so
// that many processes contending for one file neither spin nor wake in step.
package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// Errors returned by Acquire.
var (
	// ErrTimeout means the lock was held by someone else for the whole
	// wait. It is distinct from a context cancellation, which is returned
	// as the context's own error.
	ErrTimeout = errors.New("lock: timed out waiting for the lock")
)

// Backoff bounds for the retry loop. A holder keeps the lock for roughly one
// fsync, so the first retries are short; the cap keeps a long queue from
// sleeping past the moment the lock frees up by much.
const (
	minWait = 200 * time.Microsecond
	maxWait = 10 * time.Millisecond
)

// File is a lock on one path. It is safe to Acquire and Release it from one
// goroutine at a time; separate File values on the same path exclude each
// other, even within one process.
type File struct {
	path string
	fl   *flock.Flock
}

// New returns a lock on path. The file is created on first Acquire, with its
// parent directory expected to exist.
func New(path string) *File {
	return &File{path: path, fl: flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o644))}
}

// Path is the lock file's path.
func (l *File) Path() string { return l.path }

// Acquire takes the lock, waiting at most timeout (0 means try once). It
// returns ErrTimeout (wrapped with the path) when the wait runs out and the
// context's error when ctx ends first.
func (l *File) Acquire(ctx context.Context, timeout time.Duration) error {
	if brokenForTesting {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	wait := minWait
	for {
		ok, err := l.fl.TryLock()
		if err != nil {
			return fmt.Errorf("lock %s: %w", l.path, err)
		}
		if ok {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w %s after %s", ErrTimeout, filepath.Base(l.path), timeout)
		}
		// Full jitter: sleep a random slice of the current window.
		d := min(time.Duration(rand.Int64N(int64(wait)))+time.Microsecond, left)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, maxWait)
	}
}

// Release drops the lock. The file stays, so the next locker opens the same
// inode as everyone else.
func (l *File) Release() error {
	if brokenForTesting {
		return nil
	}
	return l.fl.Unlock()
}
