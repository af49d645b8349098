package ledger

import (
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// ListEach hands fn the cards List returns, in its order, each with where
// it stands (as Standings reads it), one at a time: a list of 100k cards
// is neither copied nor held twice (bl list --json). The card is valid
// for the call only: fn must neither keep nor change it, and, running
// with the backlog locked, must not call b.
func (b *Backlog) ListEach(f Filter, sortBy string, fn func(c *Card, st Standing) error) error {
	if !fold.ValidSort(sortBy) {
		return wire.Rule(ErrInvalid, "unknown sort %q: use claim, created, updated or id", sortBy)
	}
	return b.view(func(s *fold.State, now time.Time) error {
		return s.EachListed(f, now, sortBy, func(c *wire.Card) error { return fn(c, s.Standing(c, now)) })
	})
}
