package store

import (
	"context"
	"path/filepath"
	"time"

	"github.com/bl-backlog/bl/lock"
)

// ReadSettled runs read, which reads a backlog's files without the lock
// and says whether what it found is unsettled: something a reader without
// the lock can see of a change in progress, and that would be wrong to
// report (a line an append is still writing, read as a torn tail; a
// snapshot, archive set and ledger of two generations of a compaction).
// Then it runs read once more under the lock, where no append or
// compaction runs, and that result stands. When the lock cannot be had
// within SettleWait (a read-only backlog, a holder stopped), the first
// result stands. A read that only informs a reader (bl doctor's report)
// confirms what it found this way; the loads stop before a torn tail and
// start over on a replaced file instead (readFrom, loadOnce).
func ReadSettled[T any](dir string, read func() (T, bool, error)) (T, error) {
	v, unsettled, err := read()
	if !unsettled {
		return v, err
	}
	lk := lock.New(filepath.Join(dir, LockFile))
	if lk.Acquire(context.Background(), SettleWait) != nil {
		return v, err
	}
	defer lk.Release()
	v, _, err = read()
	return v, err
}

// SettleWait bounds ReadSettled's wait for the lock: writers hold it for
// milliseconds, a compaction of a large backlog for longer.
const SettleWait = 10 * time.Second
