package importer

import (
	"context"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Batch is how many events one write of an import holds, at most (it
// ends at an issue's last event).
const Batch = 4096

// Write carries a plan out. The whole plan is first checked as one
// write, exactly as it will be written (with dryRun, that is all): so a
// dry run reports what the write would do, and a write that would fail
// stops before its first batch rather than midway. It is then written in
// batches of whole issues (links, which need both their cards, last),
// each all or nothing; a batch lost to a crash is planned again, with
// the same card ids, by the next run.
func Write(ctx context.Context, b *ledger.Backlog, m ledger.Mutation, acts []Action, ttl time.Duration, dryRun bool) error {
	start := 0
	if err := b.CheckBatches(ctx, m, func() []*ledger.Event {
		end := batchEnd(acts, start)
		evs := Events(acts[start:end], ttl)
		start = end
		return evs
	}); err != nil {
		return fmt.Errorf("the import would fail, nothing was imported: %w", err)
	}
	if dryRun {
		return nil
	}
	for start := 0; start < len(acts); {
		end := batchEnd(acts, start)
		if _, err := b.WriteBatch(ctx, m, Events(acts[start:end], ttl), false); err != nil {
			return fmt.Errorf("import stopped after %d of %d writes (%s of %s): %w; what was written stays: run the import again and it continues from there", start, len(acts), acts[start].Kind, acts[start].SourceID, err)
		}
		start = end
	}
	// One compaction at the end, not one each time a batch grows the
	// ledger past the threshold; a failure is kept for bl stats and the
	// next write tries again: what was written stays.
	_ = b.CompactDue(ctx)
	return nil
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
