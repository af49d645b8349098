package ledger

// NewestHistory calls fn for the newest n events matching f (f.Limit is
// ignored), oldest first, as `git log -n` picks them, and returns the
// cursor after the last event read. It reads the whole history once and
// keeps only n events in memory.
func (b *Backlog) NewestHistory(f HistoryFilter, n int, fn func(e *Event, conflict *Conflict) error) (Cursor, error) {
	type entry struct {
		e *Event
		c *Conflict
	}
	ring := make([]entry, 0, min(n, 4096))
	next := 0 // where the next entry goes once the ring is full
	f.Limit = 0
	cur, err := b.History(f, func(e *Event, c *Conflict) error {
		if len(ring) < n {
			ring = append(ring, entry{e, c})
			return nil
		}
		ring[next] = entry{e, c}
		next = (next + 1) % n
		return nil
	})
	if err != nil {
		return cur, err
	}
	for i := range ring {
		en := ring[(next+i)%len(ring)]
		if err := fn(en.e, en.c); err != nil {
			return cur, err
		}
	}
	return cur, nil
}
