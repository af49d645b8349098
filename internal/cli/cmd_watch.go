package cli

import (
	"errors"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/watch"
)

// WatchCmd streams events as they are appended.
type WatchCmd struct {
	From       string `placeholder:"CURSOR" help:"Start after this cursor instead of at the end (resume without gaps or repeats)."`
	cardFilter `embed:""`
	Op         string `placeholder:"OPS" help:"Only these ops, comma-separated."`
	Count      int    `help:"Exit after this many events (0 = run until interrupted)."`
}

func (WatchCmd) Help() string {
	return `Prints each event appended to the backlog once, in order, as one JSON line
with its cursor, as soon as it is durable (fsnotify, no polling). Without
--from it starts at the end and shows only new events; with --from it
first replays everything after that cursor, so a watcher that restarts
with its last cursor misses nothing and sees nothing twice. It keeps going
across compaction and bl doctor --repair, and exits 0 on SIGINT or
SIGTERM. With --json the output is the same JSONL; without it, one
readable line per event.

An update also shows the values it replaced: "changes" in JSON maps each
field it changed to [old, new]; the text form adds a line per field,
old → new. The ledger stores only new values, so the first update watch
shows folds the history before it once.

Examples:

    bl watch --json
    bl watch --op claim,complete --json | while read -r ev; do ...; done
    bl watch --from "$(cat .last-cursor)" --count 100` + exitCodesHelp
}

var errWatchDone = errors.New("watch: count reached")

func (c *WatchCmd) Run(a *App) error {
	id, err := c.id(a, "watch")
	if err != nil {
		return err
	}
	ops, err := ledger.ParseOps(c.Op)
	if err != nil {
		return err
	}
	from, err := ledger.ParseCursor(c.From)
	if err != nil {
		return err
	}
	b, err := a.openChecked(notNegative("count", c.Count))
	if err != nil {
		return err
	}
	if c.From == "" {
		// Start at the end: the newest event folded so far.
		err = b.View(func(s *ledger.State, _ time.Time) error {
			if last := s.Last(); last.ID != "" {
				from = ledger.CursorOf(&last)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	filter := ledger.HistoryFilter{Card: id, Ops: ops}
	n := 0
	// The fold that gives an update's old values is built when the first
	// update comes (history up to it, once), then kept up event by event.
	var ch *ledger.Changes
	err = watch.Follow(a.ctx, b.Dir(), from, func(e *ledger.Event) error {
		match := filter.Matches(e)
		if ch == nil && match && e.Op == ledger.OpUpdate {
			var ferr error
			if ch, ferr = b.ChangesBefore(ledger.CursorOf(e)); ferr != nil {
				return ferr
			}
		}
		var changes []ledger.Change
		if ch != nil {
			changes, _ = ch.Step(e)
		}
		if !match {
			return nil
		}
		if a.JSON {
			if err := writeJSONLine(a.Stdout, withChanges(e, nil, changes)); err != nil {
				return err
			}
		} else {
			printEvent(a.Stdout, e, nil, changes)
		}
		if n++; c.Count > 0 && n >= c.Count {
			return errWatchDone
		}
		return nil
	})
	if errors.Is(err, errWatchDone) {
		return nil
	}
	return err
}
