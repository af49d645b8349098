package watch

import (
	"context"
	"errors"

	"github.com/bl-backlog/bl/ledger"
)

// Logger is what Log needs of a backlog (a *ledger.Backlog): its history,
// with each event's changes, and its directory to follow.
type Logger interface {
	HistoryChanges(f ledger.HistoryFilter, newest int, fn func(e *ledger.Event, conflict *ledger.Conflict, changes []ledger.Change) error) (ledger.Cursor, *ledger.Changes, error)
	Dir() string
}

// Log is bl log: it calls fn for the events f selects, oldest first, each
// with the fields an update changed (old → new, from a fold of the history
// before it). First the history, each event with the conflict the fold
// recorded for it (nil when it applied); with f.Limit and no f.From, the
// newest f.Limit events, as git log -n picks them. Then, with follow, each
// matching event as it is appended (its conflict nil), until ctx ends: the
// same filter, card, ops and since, for both. f.Limit bounds the history
// alone when it picks the newest events (tail -n N -f), and history and new
// events together after f.From: Log returns once f.Limit events were
// delivered.
func Log(ctx context.Context, b Logger, f ledger.HistoryFilter, follow bool, fn func(*ledger.Event, *ledger.Conflict, []ledger.Change) error) error {
	n := 0
	counted := func(e *ledger.Event, c *ledger.Conflict, changes []ledger.Change) error {
		n++
		return fn(e, c, changes)
	}
	newest := 0
	if f.Limit > 0 && f.From.IsZero() {
		newest = f.Limit
	}
	cur, fold, err := b.HistoryChanges(f, newest, counted)
	if err != nil || !follow {
		return err
	}
	limit := 0 // events left to deliver; 0 for no bound
	if newest == 0 && f.Limit > 0 {
		if limit = f.Limit - n; limit <= 0 {
			return nil
		}
	}
	// Follow on from the fold the walk built: every event steps it,
	// matching or not, so an update's changes stay right.
	delivered := 0
	err = Follow(ctx, b.Dir(), cur, func(e *ledger.Event) error {
		changes, _ := fold.Step(e)
		if !f.Matches(e) {
			return nil
		}
		if err := fn(e, nil, changes); err != nil {
			return err
		}
		if delivered++; limit > 0 && delivered >= limit {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

// errEnough ends a follow once its limit is reached.
var errEnough = errors.New("watch: limit reached")
