// Package lock is the OS-level mutual exclusion used by every writer of a
// backlog: an advisory flock(2) on a dedicated file that is never deleted.
//
// It knows nothing about cards or ledgers. A waiter tries once without
// blocking and, if the lock is busy, queues in the kernel with a blocking
// flock, so the kernel wakes a waiter when the holder lets go and waiters do
// not wake on timers only to find the lock still taken. The wait is bounded
// by a timeout and by the caller's context. A blocking flock cannot be
// interrupted, so a wait given up on stays queued on its own descriptor
// (one per File at most; the File's next wait takes it back over) and, if
// the lock comes through to it while nobody wants it, drops it at once. To
// everyone else that looks like a holder that held the lock for a moment.
package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Errors returned by Acquire.
var (
	// ErrTimeout means the lock was held by someone else for the whole
	// wait. It is distinct from a context cancellation, which is returned
	// as the context's own error.
	ErrTimeout = errors.New("lock: timed out")
)

// handOver bounds how long a try-once Acquire waits for a wait the same
// File gave up on earlier, in case that wait is being granted the lock just
// then. It only matters when the lock is busy and such a wait exists.
const handOver = 10 * time.Millisecond

// File is a lock on one path. It is safe to Acquire and Release it from one
// goroutine at a time; separate File values on the same path exclude each
// other, even within one process.
type File struct {
	path string
	// fl serves the non-blocking first try. It is never left blocked, so
	// it can be reused by every Acquire.
	fl *flock.Flock
	// held is the descriptor that holds the lock: fl or a waiter's own;
	// nil when the lock is not held.
	held *flock.Flock
	// pending is a blocking wait that an earlier Acquire gave up on and
	// that may still be queued in the kernel. The next Acquire takes it
	// back over instead of queueing a second descriptor.
	pending *waiter
}

// New returns a lock on path. The file is created on first Acquire, with its
// parent directory expected to exist.
func New(path string) *File {
	return &File{path: path, fl: newFlock(path)}
}

func newFlock(path string) *flock.Flock {
	return flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o644))
}

// Path is the lock file's path.
func (l *File) Path() string { return l.path }

// Acquire takes the lock, waiting at most timeout (0 means try once). It
// returns ErrTimeout (wrapped with the path) when the wait runs out and the
// context's error when ctx ends first. Acquiring a lock this File already
// holds succeeds at once. A try once on a busy lock returns at once, except
// when this File gave up on a wait that is still queued: then it gives that
// wait up to handOver to pass on a lock it may be receiving just then.
func (l *File) Acquire(ctx context.Context, timeout time.Duration) error {
	if brokenForTesting {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.held != nil {
		return nil
	}
	// A wait this File gave up on earlier may still be queued. Take it back
	// before trying, so that if the lock has just come through to it, it
	// passes the lock on to this call instead of dropping it.
	w := l.pending
	l.pending = nil
	if w != nil && !w.resume() {
		w = nil
	}
	ok, err := tryLock(l.fl)
	if ok || err != nil {
		if w != nil {
			l.keep(w)
		}
		if err != nil {
			return fmt.Errorf("lock %s: %w", l.path, err)
		}
		l.held = l.fl
		return nil
	}
	wait := timeout
	if wait <= 0 {
		if w == nil {
			return l.timedOut(timeout)
		}
		// The lock may be busy only because the earlier wait is taking
		// it this very moment; give it a moment to hand it over.
		wait = handOver
	}
	if w == nil {
		w = startWaiter(l.path)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-w.result:
		return l.granted(w, err)
	case <-t.C:
		if ok, err := w.abandon(); ok {
			// Granted just as the time ran out: as good as a last try.
			return l.granted(w, err)
		}
		l.pending = w
		return l.timedOut(timeout)
	case <-ctx.Done():
		if ok, err := w.abandon(); ok {
			if err == nil {
				// Granted as the caller went away: hand it straight back.
				_ = w.fl.Unlock()
			}
		} else {
			l.pending = w
		}
		return ctx.Err()
	}
}

// keep gives w up again and keeps it as the File's pending wait. Should it
// have been granted the lock meanwhile (it cannot be while l.fl holds it),
// the lock is dropped at once rather than kept for nobody.
func (l *File) keep(w *waiter) {
	if ok, err := w.abandon(); ok {
		if err == nil {
			_ = w.fl.Unlock()
		}
		return
	}
	l.pending = w
}

func (l *File) granted(w *waiter, err error) error {
	if err != nil {
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	l.held = w.fl
	return nil
}

func (l *File) timedOut(timeout time.Duration) error {
	return fmt.Errorf("%w waiting for %s after %s", ErrTimeout, l.path, timeout)
}

// Release drops the lock. The file stays, so the next locker opens the same
// inode as everyone else.
func (l *File) Release() error {
	if brokenForTesting || l.held == nil {
		return nil
	}
	if err := l.held.Unlock(); err != nil {
		return err
	}
	l.held = nil
	return nil
}

// tryLock is one non-blocking attempt.
func tryLock(fl *flock.Flock) (bool, error) {
	for {
		ok, err := fl.TryLock()
		if !errors.Is(err, syscall.EINTR) {
			return ok, err
		}
	}
}

// waiter is one blocking flock on its own descriptor, run on its own
// goroutine because the call cannot be cancelled. The goroutine and the
// Acquire waiting on it meet under mu: the goroutine delivers its outcome
// only while nobody has abandoned it, and an Acquire that abandons it
// collects any outcome delivered before that. So a granted lock always has
// exactly one owner: the Acquire that receives it, or the goroutine itself,
// which drops it at once.
type waiter struct {
	fl     *flock.Flock
	result chan error // buffered; sent to under mu

	mu        sync.Mutex
	abandoned bool
	finished  bool // the goroutine has delivered or dropped its outcome
}

func startWaiter(path string) *waiter {
	w := &waiter{fl: newFlock(path), result: make(chan error, 1)}
	go w.run()
	return w
}

func (w *waiter) run() {
	var err error
	for {
		err = w.fl.Lock()
		if !errors.Is(err, syscall.EINTR) {
			break
		}
		w.mu.Lock()
		gone := w.abandoned
		if gone {
			w.finished = true
		}
		w.mu.Unlock()
		if gone {
			return
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	if w.abandoned {
		if err == nil {
			_ = w.fl.Unlock() // also closes the descriptor
		}
		return
	}
	w.result <- err
}

// abandon tells the goroutine that nobody waits for it any more. If it had
// already delivered its outcome, abandon returns it with delivered set, and
// the caller owns whatever it got.
func (w *waiter) abandon() (delivered bool, err error) {
	w.mu.Lock()
	w.abandoned = true
	w.mu.Unlock()
	select {
	case err := <-w.result:
		return true, err
	default:
		return false, nil
	}
}

// resume takes back an abandoned wait that is still queued, keeping its
// place. It reports false when the wait has already ended, in which case the
// caller needs a new one.
func (w *waiter) resume() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return false
	}
	w.abandoned = false
	return true
}
