package fold

import (
	"fmt"
	"slices"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// depCycle returns the cycle from -> to -> ... -> from that an edge from
// "from" to "to" would close, or nil.
func (s *State) depCycle(from, to string) []string {
	path := s.depPath(to, from, map[string]bool{})
	if path == nil {
		return nil
	}
	return append([]string{from}, path...)
}

// depPath finds a path of holding links (depends_on, supersedes,
// duplicates) from a to b by depth-first search: a cycle of them, of one
// type or mixed, would hold every card on it back for good.
func (s *State) depPath(a, b string, seen map[string]bool) []string {
	if a == b {
		return []string{b}
	}
	if seen[a] {
		return nil
	}
	seen[a] = true
	c := s.Find(a)
	if c == nil {
		return nil
	}
	var path []string
	c.HoldingLinks(func(_, d string) bool {
		if p := s.depPath(d, b, seen); p != nil {
			path = append([]string{a}, p...)
		}
		return path == nil
	})
	return path
}

// parentCycle returns the cycle that making p the parent of id would close.
func (s *State) parentCycle(id, p string) []string {
	chain := []string{id, p}
	for cur, n := p, 0; n <= s.Len(); n++ {
		c := s.Find(cur)
		if c == nil || c.Parent == "" {
			return nil
		}
		cur = c.Parent
		chain = append(chain, cur)
		if cur == id {
			return chain
		}
	}
	return nil
}

// DependencyProblems lists cards that cannot become claimable on their own:
// waiting on a blocked or missing card, or with a missing parent.
func (s *State) DependencyProblems() []string {
	var out []string
	s.All()
	for _, c := range s.mem() {
		if c.Status == wire.StatusDone {
			continue
		}
		for _, d := range c.DependsOn {
			switch dc := s.mem()[d]; {
			case dc == nil:
				out = append(out, fmt.Sprintf("%s depends on %s, which does not exist", c.ID, d))
			case dc.Status == wire.StatusBlocked:
				out = append(out, fmt.Sprintf("%s waits on %s, which is blocked: %s", c.ID, d, orDash(dc.BlockedReason)))
			}
		}
		if c.Parent != "" && s.mem()[c.Parent] == nil {
			out = append(out, fmt.Sprintf("%s has parent %s, which does not exist", c.ID, c.Parent))
		}
	}
	slices.Sort(out)
	return out
}
