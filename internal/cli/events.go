package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// eventOut is an event as bl log and bl watch print it: the ledger event's
// own fields, led by its cursor, plus the conflict the fold recorded for it.
type eventOut struct {
	Cursor string `json:"cursor"`
	*ledger.Event
	Conflict *ledger.Conflict `json:"conflict,omitempty"`
	// Changes: for an update, each field it changed as [old, new].
	Changes map[string][2]any `json:"changes,omitempty"`
}

func newEventOut(e *ledger.Event, c *ledger.Conflict) eventOut {
	return eventOut{Cursor: ledger.CursorOf(e).String(), Event: e, Conflict: c}
}

// opWidth is the width of the op column: the longest op's (claim_review).
var opWidth = func() int {
	n := 0
	for _, op := range ledger.Ops {
		n = max(n, len(op))
	}
	return n
}()

// eventLine is the one-line human form of an event. Every field read from
// the ledger goes through text: an event merged in from elsewhere may hold
// anything.
func eventLine(w io.Writer, e *ledger.Event, c *ledger.Conflict) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-*s %-12s %s", e.At.UTC().Format("2006-01-02T15:04:05.000Z"), opWidth, text(string(e.Op)), text(e.Card), nameText(e.Actor))
	if e.Owner != "" {
		fmt.Fprintf(&b, " owner=%s", nameText(e.Owner))
	}
	if e.Epoch != 0 {
		fmt.Fprintf(&b, " epoch=%d", e.Epoch)
	}
	if e.TTLSeconds != 0 {
		fmt.Fprintf(&b, " ttl=%s", time.Duration(e.TTLSeconds)*time.Second)
	}
	if e.To != "" {
		fmt.Fprintf(&b, " to=%s", nameText(e.To))
	}
	if e.LinkType != "" {
		fmt.Fprintf(&b, " type=%s", text(e.LinkType))
	}
	if e.Progress != nil {
		fmt.Fprintf(&b, " progress=%d%%", *e.Progress)
	}
	if e.Force {
		b.WriteString(" forced")
	}
	if f := e.Fields; f != nil && f.Title != nil {
		fmt.Fprintf(&b, " %q", text(*f.Title))
	}
	if e.Reason != "" {
		label := "reason"
		if e.Op == ledger.OpComplete {
			label = "note"
		}
		fmt.Fprintf(&b, " %s=%q", label, text(e.Reason))
	}
	if e.Text != "" {
		fmt.Fprintf(&b, " text=%q", text(e.Text))
	}
	if e.BackoffSeconds != 0 {
		fmt.Fprintf(&b, " backoff=%s", time.Duration(e.BackoffSeconds)*time.Second)
	}
	if c != nil {
		fmt.Fprintf(&b, "  CONFLICT: %s", text(c.Reason))
		if c.Winner != "" {
			fmt.Fprintf(&b, " (lost to %s)", nameText(c.Winner))
		}
	}
	fmt.Fprintf(&b, "  @%s\n", ledger.CursorOf(e))
	io.WriteString(w, b.String())
}

// parseSince reads --since: a duration back from now ("2h") or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usagef(fmt.Sprintf("--since %q is negative", s))
		}
		return now.Add(-d).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, usagef(fmt.Sprintf("--since %q is not a duration (2h) or a time (RFC 3339 or 2026-12-01)", s))
}
