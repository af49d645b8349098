package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// WriteBatch appends events as one write under the lock, each checked
// against the state with the events before it applied (a note on a card
// the batch creates checks), so it writes all of them or none. An event
// keeps the actor it names (an imported note's author); the others take
// m's; a link's type is named as LinkTyped names it. A claim with no
// epoch takes the card's next lease. A batch never compacts: the caller
// calls CompactDue after its last batch. With checkOnly
// nothing is appended and no cards are returned: the batch is checked
// exactly as a write would be. bl import writes through it.
func (b *Backlog) WriteBatch(ctx context.Context, m Mutation, events []*Event, checkOnly bool) (cards []Card, err error) {
	if m.Actor == "" {
		return nil, wire.Rule(ErrInvalid, "an actor is required")
	}
	if len(events) == 0 {
		return nil, nil
	}
	err = b.withLock(ctx, func() error {
		cards, err = b.writeBatchLocked(m, events, checkOnly)
		return err
	})
	return cards, err
}

// CheckBatches checks the batches next returns, until it returns none, as
// one batch: each checked with every event before it applied, nothing
// appended. Building the events batch by batch keeps an import's check
// of 100,000 issues from holding all their events at once.
func (b *Backlog) CheckBatches(ctx context.Context, m Mutation, next func() []*Event) error {
	if m.Actor == "" {
		return wire.Rule(ErrInvalid, "an actor is required")
	}
	return b.withLock(ctx, func() error {
		defer func() { b.stale = true }() // the state holds events the file does not
		for evs := next(); len(evs) > 0; evs = next() {
			if _, err := b.writeBatchLocked(m, evs, true); err != nil {
				return err
			}
		}
		return nil
	})
}

// CompactDue compacts once the ledger has outgrown the configured size,
// as a single write does after appending. bl import calls it after its
// last batch; the compaction streams its files (compactLocked), so its
// memory is the fold's cards, not the ledger's or the snapshot's bytes.
// A failure is kept for Stats, as a write's is: what was written stays.
func (b *Backlog) CompactDue(ctx context.Context) error {
	return b.withLock(ctx, func() error {
		b.maybeCompact()
		return nil
	})
}

func (b *Backlog) writeBatchLocked(m Mutation, events []*Event, checkOnly bool) (cards []Card, err error) {
	now := b.opts.Clock().UTC()
	if !wire.StampInRange(now) {
		return nil, fmt.Errorf("this machine's clock reads %s; set the clock right", now.Format(time.RFC3339))
	}
	at := now
	if last := b.state.Last(); !last.At.IsZero() && !at.After(last.At) {
		at = last.At.Add(time.Nanosecond)
	}
	clock := b.stampClock(at, now)
	applied := false
	defer func() {
		// The state holds events the file does not: fold the files again
		// before the next use.
		if applied && (err != nil || checkOnly) {
			b.stale = true
		}
	}()
	var buf []byte
	for i, e := range events {
		e.ID, e.At, e.Clock = wire.NewEventID(), at.Add(time.Duration(i)), clock
		if e.Actor == "" {
			e.Actor = m.Actor
		}
		if e.Op == OpLink || e.Op == OpUnlink {
			e.LinkType = wire.WireLink(e.LinkType)
		}
		if e.Op == OpClaim && e.Epoch == 0 {
			var c *Card
			if rerr := b.state.Resolve(func() { c = b.state.Find(e.Card) }); rerr != nil {
				return nil, rerr
			}
			if c != nil {
				e.ExpectVersion, e.Epoch = c.Version, c.ClaimEpoch+1
			}
		}
		line, d, err := writtenLine(e)
		if err != nil {
			return nil, err
		}
		applied = true
		conflict, err := b.state.FoldEvent(d)
		if err != nil {
			return nil, err
		}
		if conflict != nil {
			return nil, conflict
		}
		if checkOnly {
			continue // nothing kept: an import's check holds one event at a time
		}
		events[i] = d
		buf = append(buf, line...)
	}
	if checkOnly {
		return nil, nil
	}
	if err := b.appendDurably(buf); err != nil {
		return nil, err
	}
	for _, e := range events {
		b.pos.last = e
		b.pos.seen(e.ID)
	}
	b.pos.offset += int64(len(buf))
	b.pos.lines += len(events)
	if b.opts.Appended != nil {
		b.opts.Appended(events)
	}
	// No compaction here: an import writing 100,000 issues batch by batch
	// would rewrite the whole snapshot again and again as the ledger
	// grows. It calls CompactDue once, at the end.
	return b.cardsOf(events), nil
}
