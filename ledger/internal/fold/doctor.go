package fold

import (
	"fmt"
	"slices"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// dependencyProblems lists cards that cannot become claimable on their own:
// waiting on a blocked or missing card, or with a missing parent.
func (s *State) DependencyProblems() []string {
	var out []string
	s.All()
	for _, c := range s.CardsByID {
		if c.Status == wire.StatusDone {
			continue
		}
		for _, d := range c.DependsOn {
			switch dc := s.CardsByID[d]; {
			case dc == nil:
				out = append(out, fmt.Sprintf("%s depends on %s, which does not exist", c.ID, d))
			case dc.Status == wire.StatusBlocked:
				out = append(out, fmt.Sprintf("%s waits on %s, which is blocked: %s", c.ID, d, orDash(dc.BlockedReason)))
			}
		}
		if c.Parent != "" && s.CardsByID[c.Parent] == nil {
			out = append(out, fmt.Sprintf("%s has parent %s, which does not exist", c.ID, c.Parent))
		}
	}
	slices.Sort(out)
	return out
}
