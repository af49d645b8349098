// Package lock is the OS-level mutual exclusion used by every writer of a
// backlog: an advisory flock(2) on the directory holding a dedicated lock
// file and on that file, each checked after it is granted against what is
// at its path now, so a lock file deleted or replaced behind bl's back
// costs a retry, never two holders (see File).
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
	"path/filepath"
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

// File is the lock of one backlog: a flock on the lock file and, where the
// platform allows, first on the directory holding it. It is safe to Acquire
// and Release it from one goroutine at a time; separate File values on the
// same path exclude each other, even within one process.
//
// The lock file is ignored by git, so git clean -X deletes it, and a user
// may remove it by hand; a pull may replace a copy someone force-added.
// Each flock is checked after it is granted against the file now at its
// path, and taken again when they differ. That alone cannot stop a
// deletion while the lock is held: the next locker would create a new file
// and lock that. The directory cannot be deleted while it holds tracked
// files, so locking it too keeps two holders apart whatever happens to the
// lock file; the lock file is still taken, after the directory, so bl
// releases that lock only the file exclude this one as before.
type File struct {
	path string
	dir  *one // nil where directories cannot be locked
	file *one
}

// New returns a lock on path. The file is created on first Acquire, with its
// parent directory expected to exist.
func New(path string) *File {
	l := &File{path: path, file: newOne(path, os.O_CREATE|os.O_RDWR)}
	if lockDirectory && !staleForTesting {
		l.dir = newOne(filepath.Dir(path), os.O_RDONLY)
	}
	return l
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
	deadline := time.Now().Add(timeout)
	if l.dir != nil {
		if err := l.dir.acquire(ctx, timeout); err != nil {
			return l.named(err, timeout)
		}
	}
	if err := l.file.acquire(ctx, max(0, time.Until(deadline))); err != nil {
		if l.dir != nil {
			_ = l.dir.release()
		}
		return l.named(err, timeout)
	}
	return nil
}

// named makes a timeout name the lock file, whichever of the two flocks
// ran out of time.
func (l *File) named(err error, timeout time.Duration) error {
	if errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%w waiting for %s after %s", ErrTimeout, l.path, timeout)
	}
	return err
}

// Release drops the lock. The file stays, so the next locker opens the same
// inode as everyone else.
func (l *File) Release() error {
	if brokenForTesting {
		return nil
	}
	err := l.file.release()
	if l.dir != nil {
		if derr := l.dir.release(); err == nil {
			err = derr
		}
	}
	return err
}

// one is a flock on one path, opened with flag: the lock file, or the
// directory holding it.
type one struct {
	path string
	flag int
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

func newOne(path string, flag int) *one {
	return &one{path: path, flag: flag, fl: newFlock(path, flag)}
}

func newFlock(path string, flag int) *flock.Flock {
	return flock.New(path, flock.SetFlag(flag), flock.SetPermissions(0o644))
}

// acquire takes the flock on l.path as it is now: a descriptor that got the
// lock on a file since deleted or replaced is let go and the lock taken
// again, so every holder holds the inode that is at the path.
func (l *one) acquire(ctx context.Context, timeout time.Duration) error {
	if l.held != nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for moved := 0; ; moved++ {
		if err := l.acquireOnce(ctx, max(0, time.Until(deadline))); err != nil {
			return err
		}
		same, err := l.atPath()
		if staleForTesting {
			same, err = true, nil
		}
		if same || err != nil {
			if err != nil {
				l.release()
			}
			return err
		}
		// Deleted or replaced while we waited: the lock we hold guards
		// nothing anyone else will open.
		l.release()
		if moved == maxMoved {
			return fmt.Errorf("lock %s: replaced %d times while locking it", l.path, maxMoved)
		}
	}
}

// maxMoved bounds how many times in a row acquire finds its file replaced
// before it gives up: something is deleting the lock file in a tight loop.
const maxMoved = 1000

// atPath reports whether the descriptor holding the lock is the file now at
// the path (same device and inode).
func (l *one) atPath() (bool, error) {
	held, err := l.held.Stat()
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", l.path, err)
	}
	now, err := os.Stat(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", l.path, err)
	}
	return os.SameFile(held, now), nil
}

func (l *one) acquireOnce(ctx context.Context, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
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
	// Asked before queueing: a context that sets up its signal handler on
	// first use (bl's) has it in place once the wait is visible.
	done := ctx.Done()
	if w == nil {
		w = startWaiter(l.path, l.flag)
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
	case <-done:
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
func (l *one) keep(w *waiter) {
	if ok, err := w.abandon(); ok {
		if err == nil {
			_ = w.fl.Unlock()
		}
		return
	}
	l.pending = w
}

func (l *one) granted(w *waiter, err error) error {
	if err != nil {
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	l.held = w.fl
	return nil
}

func (l *one) timedOut(timeout time.Duration) error {
	return fmt.Errorf("%w waiting for %s after %s", ErrTimeout, l.path, timeout)
}

// release drops the lock and closes its descriptor, so the next acquire
// opens the file at the path afresh.
func (l *one) release() error {
	if l.held == nil {
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

func startWaiter(path string, flag int) *waiter {
	w := &waiter{fl: newFlock(path, flag), result: make(chan error, 1)}
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
