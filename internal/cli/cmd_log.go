package cli

import (
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/watch"
)

// LogCmd prints the event history.
type LogCmd struct {
	cardFilter `embed:""`
	Op         string `placeholder:"OPS" help:"Only these ops, comma-separated (claim,complete,...)."`
	Since      string `placeholder:"DURATION|TIME" help:"Only events since a duration ago (2h) or a time."`
	From       string `placeholder:"CURSOR" help:"Only events after this cursor, as printed by log and watch."`
	Limit      int    `placeholder:"N" help:"At most this many events (0 = all): the newest N, or with --from the next N after the cursor."`
	Follow     bool   `short:"f" help:"Keep printing new events as they are appended (JSONL with --json)."`
}

func (LogCmd) Help() string {
	return `Events oldest first, each with a cursor (@... in the text form, "cursor" in
JSON) that --from resumes after. History survives compaction: compacted
events live in .backlog/archive/ and are read from there. Events the fold
refused (the losing claim of two merged clones, a fenced heartbeat) are
shown with the conflict recorded for them.

--json prints an array, or with --follow one event per line.

Examples:

    bl log --id A1
    bl log --since 2h --op claim,complete
    bl log --limit 20                  # the newest 20, oldest first
    bl log --limit 100 --json | jq -r '.[-1].cursor'
    bl log --from 1795312345123456789-9f2c51d0a4b7e361 --follow` + exitCodesHelp
}

func (c *LogCmd) Run(a *App) error {
	id, err := c.id("log")
	if err != nil {
		return err
	}
	f := ledger.HistoryFilter{Card: id, Limit: c.Limit}
	if f.Ops, err = ledger.ParseOps(c.Op); err != nil {
		return err
	}
	if c.Since != "" {
		if f.Since, err = parseSince(c.Since, a.now()); err != nil {
			return err
		}
	}
	if f.From, err = ledger.ParseCursor(c.From); err != nil {
		return err
	}
	if err := notNegative("limit", c.Limit); err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := b.Get(id); err != nil {
			return err
		}
	}
	var list []eventOut
	print := func(e *ledger.Event, conflict *ledger.Conflict) error {
		switch {
		case a.JSON && c.Follow:
			return writeJSONLine(a.Stdout, newEventOut(e, conflict))
		case a.JSON:
			list = append(list, newEventOut(e, conflict))
		default:
			eventLine(a.Stdout, e, conflict)
		}
		return nil
	}
	var cur ledger.Cursor
	if c.Limit > 0 && c.From == "" {
		cur, err = b.NewestHistory(f, c.Limit, print)
	} else {
		cur, err = b.History(f, print)
	}
	if err != nil {
		return err
	}
	if !c.Follow {
		if a.JSON {
			if list == nil {
				list = []eventOut{}
			}
			return writeJSON(a.Stdout, list)
		}
		return nil
	}
	if c.Limit > 0 {
		return nil
	}
	return watch.Follow(a.ctx, b.Dir(), cur, func(e *ledger.Event) error {
		if f.Card != "" || len(f.Ops) > 0 {
			if !(ledger.HistoryFilter{Card: f.Card, Ops: f.Ops}).Matches(e) {
				return nil
			}
		}
		return print(e, nil)
	})
}
