package ledger

import (
	"time"

	"github.com/bl-backlog/bl/lock"
)

// ErrLockTimeout is (wrapped) the error of a write whose wait for the
// writers' lock ran out: nothing was written.
var ErrLockTimeout = lock.ErrTimeout

// Publish runs under the writers' lock once a write's events are built,
// stamped and checked against the state, before they are appended: st is
// the state they were checked against, lines their encoded ledger lines.
// An error appends nothing and is the write's error. A replayed request
// (its request id already folded) publishes nothing.
//
// A write through a git remote publishes its event to the remote first,
// so a write the remote refused leaves nothing behind in the ledger.
type Publish func(st *State, events []*Event, lines []byte) error

// Publishing runs fn with every write made through this handle meanwhile
// published by p before it is appended.
func (b *Backlog) Publishing(p Publish, fn func() error) error {
	b.mu.Lock()
	b.publish = p
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.publish = nil
		b.mu.Unlock()
	}()
	return fn()
}

// PickTop returns up to k claimable cards matching f, best first: the
// cards Pick would return one after another.
func (s *State) PickTop(f Filter, now time.Time, k int) []Card {
	var out []Card
	s.inClaimOrder(now, func(c *Card) bool {
		if f.match(s, c, now) && s.claimable(c, now, "") == nil {
			out = append(out, c.clone())
		}
		return len(out) < k
	})
	return out
}
