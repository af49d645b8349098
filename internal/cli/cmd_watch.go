package cli

import (
	"errors"
	"fmt"
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
	Arbiter    string `placeholder:"URL" help:"Also follow this claim arbiter (default: BL_ARBITER, else the local .backlog/arbiter.json): other machines' claims and completions show as the arbiter takes them."`
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
    bl watch --from "$(cat .last-cursor)" --count 100

With a claim arbiter (--arbiter, BL_ARBITER or .backlog/arbiter.json),
watch also follows the arbiter's bucket and takes every decision it makes
into this clone's ledger as it happens, so another machine's claim or
completion shows within a second. An arbiter that cannot be reached exits
7; one lost later is a warning, and watch goes on with this clone.` + exitCodesHelp
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
		if from, err = lastCursor(b); err != nil {
			return err
		}
	}
	arb, as, err := a.throughArbiter("watch", remoteChoice{Arbiter: c.Arbiter})
	if err != nil {
		return err
	}
	if arb != nil {
		stop, err := arb.Follow(a.ctx, b, as, func(err error) { a.Warn(fmt.Sprintf("no longer following the claim arbiter: %v", err)) })
		if err != nil {
			return err
		}
		defer stop()
	}
	w := &watcher{a: a, b: b, filter: ledger.HistoryFilter{Card: id, Ops: ops}, count: c.Count}
	err = watch.Follow(a.ctx, b.Dir(), from, w.event)
	if errors.Is(err, errWatchDone) {
		return nil
	}
	return err
}

// lastCursor is where a watch without --from starts: at the end, the
// newest event folded so far.
func lastCursor(b *ledger.Backlog) (ledger.Cursor, error) {
	var from ledger.Cursor
	err := b.View(func(s *ledger.State, _ time.Time) error {
		if last := s.Last(); last.ID != "" {
			from = ledger.CursorOf(&last)
		}
		return nil
	})
	return from, err
}

// watcher prints the events a watch follows.
type watcher struct {
	a      *App
	b      *ledger.Backlog
	filter ledger.HistoryFilter
	count  int // stop after this many; 0 never
	n      int
	// The fold that gives an update's old values is built when the first
	// update comes (history up to it, once), then kept up event by event.
	ch *ledger.Changes
}

func (w *watcher) event(e *ledger.Event) error {
	match := w.filter.Matches(e)
	if w.ch == nil && match && e.Op == ledger.OpUpdate {
		var err error
		if w.ch, err = w.b.ChangesBefore(ledger.CursorOf(e)); err != nil {
			return err
		}
	}
	var changes []ledger.Change
	if w.ch != nil {
		changes, _ = w.ch.Step(e)
	}
	if !match {
		return nil
	}
	if w.a.JSON {
		if err := writeJSONLine(w.a.Stdout, withChanges(e, nil, changes)); err != nil {
			return err
		}
	} else {
		printEvent(w.a.Stdout, e, nil, changes)
	}
	if w.n++; w.count > 0 && w.n >= w.count {
		return errWatchDone
	}
	return nil
}

func (c *WatchCmd) gitWork(a *App) string {
	if s, err := a.arbiterSettings(remoteChoice{Arbiter: c.Arbiter}); err != nil || s.URL != "" {
		return arbiterWhat("watch", s.URL)
	}
	return ""
}
