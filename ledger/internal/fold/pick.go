package fold

import (
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// PickTop returns up to k claimable cards matching f, best first: the
// cards Pick would return one after another.
func (s *State) PickTop(f Filter, now time.Time, k int) []wire.Card {
	var out []wire.Card
	s.InClaimOrder(now, func(c *wire.Card) bool {
		if f.Match(s, c, now) && s.claimable(c, now, "") == nil {
			out = append(out, c.Clone())
		}
		return len(out) < k
	})
	return out
}
