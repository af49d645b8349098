package fold

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
