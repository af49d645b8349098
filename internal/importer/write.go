package importer

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// Batch is how many events one write of an import holds, at most (it
// ends at an issue's last event).
const Batch = 4096

// Write carries a plan out: run over the actions, in batches.
func Write(ctx context.Context, b *ledger.Backlog, m ledger.Mutation, acts []Action, ttl time.Duration, dryRun bool) error {
	err := run(ctx, b, m, ttl, dryRun, func(bool) func(Cards) ([]Action, error) {
		start := 0
		return func(Cards) ([]Action, error) {
			end := batchEnd(acts, start)
			batch := acts[start:end]
			start = end
			return batch, nil
		}
	})
	if err == nil && !dryRun {
		// One compaction at the end, not one each time a batch grows the
		// ledger past the threshold; a failure is kept for bl stats and
		// the next write tries again: what was written stays.
		_ = b.CompactDue(ctx)
	}
	return err
}

// Import plans and writes a stream's items one batch at a time: an item's
// text, and its card if it was imported before, are read when its batch
// is planned and dropped once the batch is written, so 100,000 issues
// never sit in memory at once, nor a copy of the cards of an import
// resumed (the ledger's fold holds the cards). rep counts what the plan leaves out, once;
// each sees every action, in order, as the check pass plans it (the dry
// run's report and the write's are the same); touched is how many items
// have any. The caller compacts (ledger's CompactDue) once it has let go
// of the stream and the planner, whose memory the compaction can use.
func Import(ctx context.Context, b *ledger.Backlog, m ledger.Mutation, s *Stream, p *Planner, rep *Report, ttl time.Duration, dryRun bool, each func(Action)) (touched int, err error) {
	err = run(ctx, b, m, ttl, dryRun, func(check bool) func(Cards) ([]Action, error) {
		r := &Report{} // the write pass plans again: count once
		if check {
			r = rep
		}
		order, next := p.Order(), 0
		var links []Action
		var batch []Action
		return func(cards Cards) ([]Action, error) {
			batch = batch[:0]
			for ; next < len(order) && len(batch) < Batch; next++ {
				it, err := s.Item(order[next])
				if err != nil {
					return nil, err
				}
				acts, ls := p.Plan(it, cards, r)
				if check && len(acts)+len(ls) > 0 {
					touched++
				}
				links = append(links, ls...)
				batch = append(batch, acts...)
			}
			if len(batch) == 0 { // every item planned: the links, once both ends exist
				n := min(Batch, len(links))
				batch, links = append(batch, links[:n]...), links[n:]
			}
			if check && each != nil {
				for _, a := range batch {
					each(a)
				}
			}
			return batch, nil
		}
	})
	return touched, err
}

// run checks every batch passes gives as one write, exactly as it will be
// written (with dryRun, that is all): so a dry run checks what the write
// would do, and a write that would fail stops before its first batch
// rather than midway. It then writes the batches a second pass gives, each
// all or nothing; a batch lost to a crash is planned again, with the same
// card ids, by the next run. A pass plans each batch against the backlog
// as it stands then: in the check, with the batches before it applied.
func run(ctx context.Context, b *ledger.Backlog, m ledger.Mutation, ttl time.Duration, dryRun bool, passes func(check bool) func(Cards) ([]Action, error)) error {
	var failed error
	var checked []uint64 // each batch of the check, as batchSum gives it
	next := passes(true)
	if err := b.CheckBatches(ctx, m, func(s *ledger.State, now time.Time) []*ledger.Event {
		batch, err := next(StateCards(s, now))
		if err != nil {
			failed = err
			return nil
		}
		checked = append(checked, batchSum(batch))
		return Events(batch, ttl)
	}); err != nil {
		return fmt.Errorf("the import would fail, nothing was imported: %w", err)
	}
	if failed != nil {
		return fmt.Errorf("nothing was imported: %w", failed)
	}
	if dryRun {
		return nil
	}
	next = passes(false)
	for done, n := 0, 0; ; {
		var batch []Action
		err := b.View(func(s *ledger.State, now time.Time) (err error) {
			batch, err = next(StateCards(s, now))
			return err
		})
		if err == nil && (n >= len(checked) || batchSum(batch) != checked[n]) {
			// Another writer changed a card of the batch since the check:
			// what was reported is not what would be written.
			err = ledger.Errorf(ledger.ErrConflict, "the backlog changed while it was imported (another writer)")
		}
		if err != nil {
			return fmt.Errorf("import stopped after %d writes: %w; what was written stays: run the import again and it continues from there", done, err)
		}
		if len(batch) == 0 {
			break
		}
		n++
		if _, err := b.WriteBatch(ctx, m, Events(batch, ttl), false); err != nil {
			return fmt.Errorf("import stopped after %d writes (%s of %s): %w; what was written stays: run the import again and it continues from there", done, batch[0].Kind, batch[0].SourceID, err)
		}
		done += len(batch)
	}
	return nil
}

// batchSum is a checksum of a batch's actions: the write pass writes a
// batch only if the check planned the same one.
func batchSum(batch []Action) uint64 {
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	for _, a := range batch {
		_ = enc.Encode(a)
	}
	return h.Sum64()
}

// batchEnd is where the batch starting at start ends: at most Batch
// actions, and never inside an issue's (links are written one by one
// once every card exists).
func batchEnd(acts []Action, start int) int {
	end := min(start+Batch, len(acts))
	for end < len(acts) && acts[end].Key == acts[end-1].Key && acts[end].Kind != ActLink {
		end++
	}
	return end
}
