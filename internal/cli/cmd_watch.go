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

Examples:

    bl watch --json
    bl watch --op claim,complete --json | while read -r ev; do ...; done
    bl watch --from "$(cat .last-cursor)" --count 100` + exitCodesHelp
}

var errWatchDone = errors.New("watch: count reached")

func (c *WatchCmd) Run(a *App) error {
	id, err := c.id("watch")
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
	if err := notNegative("count", c.Count); err != nil {
		return err
	}
	b, err := a.Open()
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
	err = watch.Follow(a.ctx, b.Dir(), from, func(e *ledger.Event) error {
		if !filter.Matches(e) {
			return nil
		}
		if a.JSON {
			if err := writeJSONLine(a.Stdout, newEventOut(e, nil)); err != nil {
				return err
			}
		} else {
			eventLine(a.Stdout, e, nil)
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
