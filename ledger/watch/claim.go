package watch

import (
	"context"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Claimer is what Claim needs of a backlog (a *ledger.Backlog): its
// claim, its directory to watch, and when a lease or a deferral next comes
// due.
type Claimer interface {
	Claim(ctx context.Context, r ledger.ClaimRequest) (*ledger.Card, error)
	Dir() string
	NextWake() (time.Time, error)
}

// Claim claims as b.Claim does, and when nothing is claimable waits up to
// wait for a card to become claimable: it tries again each time the ledger
// changes or the next lease expiry or deferral comes due, never by polling,
// until it wins a card, the wait runs out (nil, nil) or ctx ends. The
// watcher starts before the first attempt, so no change between an attempt
// and the wait is missed.
func Claim(ctx context.Context, b Claimer, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error) {
	if wait <= 0 {
		return b.Claim(ctx, req)
	}
	n, err := NewNotifier(b.Dir())
	if err != nil {
		return nil, err
	}
	defer n.Close()
	deadline := time.Now().Add(wait)
	for {
		card, err := b.Claim(ctx, req)
		if err != nil || card != nil {
			return card, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		wake, err := b.NextWake()
		if err != nil {
			return nil, err
		}
		if !wake.IsZero() {
			left = min(left, time.Until(wake)+time.Millisecond)
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-n.C:
		case <-t.C:
		}
		t.Stop()
		if err := n.Err(); err != nil {
			return nil, fmt.Errorf("watch %s: %w", b.Dir(), err)
		}
	}
}
