package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

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

An update shows the values it replaced: "changes" in JSON maps each field
it changed to [old, new] ({"title":["old","new"]}); the text form adds an
indented line per field, old → new. The ledger stores only the new
values, so log folds history from its start once to find the old ones.

--json prints an array, or with --follow one event per line. --limit N
--follow prints the newest N, then follows; with --from, it stops after N.

Examples:

    bl log --id A1
    bl log --since 2h --op claim,complete
    bl log --limit 20                  # the newest 20, oldest first
    bl log --limit 100 --json | jq -r '.[-1].cursor'
    bl log --from 1795312345123456789-9f2c51d0a4b7e361 --follow` + exitCodesHelp
}

func (c *LogCmd) Run(a *App) error {
	id, err := c.id(a, "log")
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
	b, err := a.openChecked(notNegative("limit", c.Limit))
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := b.Get(id); err != nil {
			return err
		}
	}
	var list []eventOut
	print := func(e *ledger.Event, conflict *ledger.Conflict, changes []ledger.Change) error {
		switch {
		case a.JSON && c.Follow:
			return writeJSONLine(a.Stdout, withChanges(e, conflict, changes))
		case a.JSON:
			list = append(list, withChanges(e, conflict, changes))
		default:
			printEvent(a.Stdout, e, conflict, changes)
		}
		return nil
	}
	// Updates show the values they replaced, found by folding history
	// from its start once (see watch.Log).
	if err := watch.Log(a.ctx, b, f, c.Follow, print); err != nil {
		return err
	}
	if a.JSON && !c.Follow {
		if list == nil {
			list = []eventOut{}
		}
		return writeJSON(a.Stdout, list)
	}
	return nil
}

// withChanges is an event as log and watch print it, with the fields an
// update changed.
func withChanges(e *ledger.Event, c *ledger.Conflict, changes []ledger.Change) eventOut {
	out := newEventOut(e, c)
	if len(changes) > 0 {
		out.Changes = make(map[string][2]any, len(changes))
		for _, ch := range changes {
			out.Changes[ch.Field] = [2]any{ch.Old, ch.New}
		}
	}
	return out
}

// printEvent prints an event in the human form: its line, then one
// indented line per field an update changed, old → new.
func printEvent(w io.Writer, e *ledger.Event, c *ledger.Conflict, changes []ledger.Change) {
	eventLine(w, e, c)
	for _, ch := range changes {
		fmt.Fprintf(w, "    %s: %s → %s\n", ch.Field, changeValue(ch.Old), changeValue(ch.New))
	}
}

// changeValueMax bounds a string in the human form of a change; --json
// has it whole.
const changeValueMax = 72

// changeValue is the human form of a value in a ledger.Change: strings
// quoted (long ones cut short), lists bracketed, a missing value as -.
func changeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		s := text(x)
		if r := []rune(s); len(r) > changeValueMax {
			s = string(r[:changeValueMax]) + "…"
		}
		return strconv.Quote(s)
	case ledger.Status:
		return string(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = text(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case time.Time:
		return stamp(&x)
	}
	return fmt.Sprint(v)
}
