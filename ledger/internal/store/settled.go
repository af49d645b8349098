package store

import (
	"context"
	"path/filepath"
	"time"

	"github.com/bl-backlog/bl/lock"
)

// ReadSettled runs read, which reads a backlog's files without the lock
// and returns what it found wrong as a finding ("" when nothing): what a
// reader without the lock can also see of a change in progress (a line an
// append is still writing, read as a torn tail; a snapshot, archive set and
// ledger of two generations of a compaction). So a finding is read again
// after the lock was free for a moment: whatever was in progress during
// the read has finished by then. A finding the second read repeats held
// still across it, and stands; another one is read again, up to
// settleReads reads in all. The lock is held only for that moment, never
// for a read (a bl doctor of a large backlog takes seconds, and writers
// wait for the lock 10s by default). When the lock cannot be had within
// SettleWait (a read-only backlog, a holder stopped), the last read
// stands. A read that only informs (bl doctor's report) confirms what it
// found this way; the loads stop before a torn tail and start over on a
// replaced file instead (readFrom, loadOnce).
func ReadSettled[T any](dir string, read func() (T, string, error)) (T, error) {
	v, finding, err := read()
	lk := lock.New(filepath.Join(dir, LockFile))
	for n := 1; finding != "" && n < settleReads; n++ {
		if lk.Acquire(context.Background(), SettleWait) != nil {
			break
		}
		lk.Release()
		var again string
		v, again, err = read()
		if again == finding {
			break
		}
		finding = again
	}
	return v, err
}

// settleReads bounds ReadSettled's reads of one finding that keeps
// changing (writers and compactions running all along).
const settleReads = 4

// SettleWait bounds ReadSettled's wait for the lock: writers hold it for
// milliseconds, a compaction of a large backlog for longer.
const SettleWait = 10 * time.Second
