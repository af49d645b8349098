package gitsync

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/gofrs/flock"
)

// A remote lease write is staged under the backlog lock, pushed with the
// lock released and appended afterwards (leaseRounds), so the request id's
// receipt, which answers a retry, exists only once the write is appended.
// Two attempts of one request on one clone at once — a retry started while
// the first is still out — would each stage a write of their own, and both
// could land. So the remote writes of one request id take turns, through a
// flock on one of requestStripes files in the clone's git directory
// (bl/requests): the retry waits for the first attempt and then answers
// from its receipt. Request ids share a stripe by hash; two that do only
// take turns. The files are not in the backlog's cache: it is ignored, and
// git clean -fdX deleting it while the first attempt is out would let a
// retry lock a new file and stage a claim of its own.
const requestStripes = 256

// requestWait is how long an attempt waits for another attempt of the same
// request to end: a lease write takes at most LeaseTries rounds.
var requestWait = 2 * time.Minute

// The turns are plain flocks (gofrs/flock), not package lock: that also
// locks the directory holding the file, which would make the 256 stripes
// one.

// holdRequest takes the turn of request id rid, when the caller gave one,
// and returns its release.
func (s *Syncer) holdRequest(ctx context.Context, rid string) (release func(), err error) {
	if rid == "" {
		return func() {}, nil
	}
	dir := filepath.Join(s.g.commonDir, "bl", "requests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(rid))
	fl := flock.New(filepath.Join(dir, fmt.Sprintf("%02x.lock", int(sum[0])%requestStripes)))
	ok, err := fl.TryLock()
	if err == nil && !ok {
		if s.onRequestWait != nil {
			s.onRequestWait()
		}
		wctx, cancel := context.WithTimeout(ctx, requestWait)
		defer cancel()
		ok, err = fl.TryLockContext(wctx, 10*time.Millisecond)
		if !ok && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = requestBusy{fmt.Errorf("%w: request %q is still being answered by another bl process after %s", ledger.ErrLockTimeout, rid, requestWait)}
		}
	}
	if err != nil || !ok {
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return func() { _ = fl.Unlock() }, nil
}

// requestBusy is a wait for another attempt of the same request that ran
// out: a lock timeout (exit 5) whose advice is not the backlog lock's.
type requestBusy struct{ error }

func (e requestBusy) Unwrap() error { return e.error }

// Hint is what to do next (the command line prints it under the error).
func (requestBusy) Hint() string {
	return "another bl process is still answering this request id; retry with the same --request-id once it has ended"
}
