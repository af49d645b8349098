package ledger

import (
	"context"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// Standings derives where each of cards (copies read from this backlog)
// stands now, their dependencies as the state this handle last read or
// wrote holds them: the state the cards came from. It reads no file, so
// what a command prints after its write is the fold of that write.
func (b *Backlog) Standings(cards []Card) (out []Standing, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.policy()
	b.limitPaths(context.Background(), 0)
	now := b.opts.Clock().UTC()
	out = make([]Standing, len(cards))
	err = b.state.Resolve(func() {
		for i := range cards {
			out[i] = b.state.Standing(&cards[i], now)
		}
	})
	if err == nil {
		err = b.pathsInterrupted(context.Background())
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NextWake is State.NextWake on the current state.
func (b *Backlog) NextWake() (t time.Time, err error) {
	err = b.view(func(s *fold.State, now time.Time) error {
		t = s.NextWake(now)
		return nil
	})
	return t, err
}
