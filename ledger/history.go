package ledger

import (
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// ChangesBefore folds the backlog's history up to, not including, the
// event at cursor to (all of it for the zero cursor), for a caller that
// goes on from there with Step: bl watch, when the first update it shows
// needs the values before it.
func (b *Backlog) ChangesBefore(to Cursor) (*Changes, error) {
	c := fold.NewChanges()
	stop := &Event{At: to.At, ID: to.ID}
	_, err := b.History(HistoryFilter{}, func(e *Event, _ *Conflict) error {
		if !to.IsZero() && !e.Before(stop) {
			return store.ErrStop // History ends quietly
		}
		_, _ = c.Step(e) // a refused event is the fold's business, as in Open
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// HistoryChanges is History (or, with newest > 0 and no f.From,
// NewestHistory with that many) that also passes each update's changes,
// found by folding every event from the start of history once. The
// conflict passed is the backlog's own verdict, as History gives it. It
// also returns the fold, which has read every event up to the cursor when
// the walk ran to the end, for a follower to go on with Step.
func (b *Backlog) HistoryChanges(f HistoryFilter, newest int, fn func(e *Event, conflict *Conflict, changes []Change) error) (Cursor, *Changes, error) {
	for _, op := range f.Ops {
		if !op.Known() {
			return f.From, nil, wire.Rule(ErrInvalid, "unknown op %q: use one of %s", op, store.OpNames())
		}
	}
	type entry struct {
		e  *Event
		c  *Conflict
		ch []Change
	}
	var ring []entry
	next := 0
	useRing := newest > 0 && f.From.IsZero()
	limit := f.Limit
	if useRing {
		limit = 0
	}
	sel := HistoryFilter{Card: f.Card, Ops: f.Ops, Since: f.Since}
	ch := fold.NewChanges()
	n := 0
	// The walk starts at the beginning, since the fold needs every event;
	// History's cursor is then where History(f) would leave it, except
	// that it never goes back before f.From.
	cur, err := b.History(HistoryFilter{}, func(e *Event, c *Conflict) error {
		changes, _ := ch.Step(e)
		if !f.From.Before(e) || !sel.Matches(e) {
			return nil
		}
		if limit > 0 && n >= limit {
			return store.ErrStop
		}
		n++
		if !useRing {
			return fn(e, c, changes)
		}
		if len(ring) < newest {
			ring = append(ring, entry{e, c, changes})
			return nil
		}
		ring[next] = entry{e, c, changes}
		next = (next + 1) % newest
		return nil
	})
	if !f.From.IsZero() && cur.Before(&Event{At: f.From.At, ID: f.From.ID}) {
		cur = f.From
	}
	if err != nil {
		return cur, ch, err
	}
	for i := range ring {
		en := ring[(next+i)%len(ring)]
		if err := fn(en.e, en.c, en.ch); err != nil {
			return cur, ch, err
		}
	}
	return cur, ch, nil
}

// History calls fn for each event matching f, oldest first, across the
// archived segments and the ledger, with the conflict the fold recorded
// for it (nil when it applied). It returns the cursor after the last event
// it read, matching or not, so a caller can resume exactly there.
func (b *Backlog) History(f HistoryFilter, fn func(e *Event, conflict *Conflict) error) (Cursor, error) {
	return b.st.History(f, fn)
}

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
