package store

import (
	"context"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// WriteBatch is ledger.Backlog.WriteBatch's write: events, stamped, as one
// append under the lock, by actor unless an event names its own. A batch
// never compacts: the caller calls CompactDue after its last batch.
func (b *Store) WriteBatch(ctx context.Context, actor string, events []*wire.Event, checkOnly bool) (cards []wire.Card, err error) {
	err = b.withLock(ctx, func() error {
		cards, err = b.writeBatchLocked(actor, events, checkOnly)
		return err
	})
	return cards, err
}

// CheckBatches is ledger.Backlog.CheckBatches's check: every batch next
// returns checked as one, nothing appended. next reads the state with the
// batches before it applied.
func (b *Store) CheckBatches(ctx context.Context, actor string, next func(s *fold.State, now time.Time) []*wire.Event) error {
	return b.withLock(ctx, func() error {
		defer func() { b.stale = true }() // the state holds events the file does not
		for evs := next(b.state, b.opts.Clock().UTC()); len(evs) > 0; evs = next(b.state, b.opts.Clock().UTC()) {
			if _, err := b.writeBatchLocked(actor, evs, true); err != nil {
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
func (b *Store) CompactDue(ctx context.Context) error {
	return b.withLock(ctx, func() error {
		b.maybeCompact()
		return nil
	})
}

func (b *Store) writeBatchLocked(actor string, events []*wire.Event, checkOnly bool) (cards []wire.Card, err error) {
	now := b.opts.Clock().UTC()
	if !wire.StampInRange(now) {
		return nil, fmt.Errorf("this machine's clock reads %s; set the clock right", now.Format(time.RFC3339))
	}
	at := now
	if last := b.state.Last(); !last.At.IsZero() && !at.After(last.At) {
		at = last.At.Add(time.Nanosecond)
	}
	clock := b.StampClock(at, now)
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
			e.Actor = actor
		}
		if e.Op == wire.OpLink || e.Op == wire.OpUnlink {
			e.LinkType = wire.WireLink(e.LinkType)
		}
		if e.Op == wire.OpClaim && e.Epoch == 0 {
			var c *wire.Card
			if rerr := b.state.Resolve(func() { c = b.state.Find(e.Card) }); rerr != nil {
				return nil, rerr
			}
			if c != nil {
				e.ExpectVersion, e.Epoch = c.Version, c.ClaimEpoch+1
			}
		}
		var held *wire.Card // what the card holds passes (WrittenLineOn)
		if e.Op != wire.OpCreate && (e.Fields != nil || e.Owner != "") {
			if rerr := b.state.Resolve(func() { held = b.state.Find(e.Card) }); rerr != nil {
				return nil, rerr
			}
		}
		line, d, err := WrittenLineOn(e, held)
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
	b.advance(events, buf)
	// No compaction here: an import writing 100,000 issues batch by batch
	// would rewrite the whole snapshot again and again as the ledger
	// grows. It calls CompactDue once, at the end.
	return b.CardsOf(events), nil
}
