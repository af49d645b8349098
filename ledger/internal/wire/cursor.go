package wire

import (
	"strconv"
	"strings"
	"time"
)

// Cursor is a position in a backlog's history: just after the event with
// this (at, id). Events are strictly ordered by (at, id), so a cursor stays
// meaningful across compaction, repair and merges, which move events
// between files but never reorder them.
type Cursor struct {
	At time.Time
	ID string
}

// CursorOf is the cursor just after e.
func CursorOf(e *Event) Cursor { return Cursor{At: e.At, ID: e.ID} }

// String renders the cursor as "<unix nanoseconds>-<event id>".
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	return strconv.FormatInt(c.At.UnixNano(), 10) + "-" + c.ID
}

// IsZero reports whether c is the start of history.
func (c Cursor) IsZero() bool { return c.ID == "" && c.At.IsZero() }

// ParseCursor reads a cursor printed by String; "" is the start.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	ns, id, ok := strings.Cut(s, "-")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" || n < 0 {
		return Cursor{}, Rule(ErrInvalid, "cursor %q is not <unix-nanoseconds>-<event-id>, as printed by bl log and bl watch", s)
	}
	return Cursor{At: time.Unix(0, n).UTC(), ID: id}, nil
}

// Before reports whether the event at c comes before e, i.e. e is new to a
// reader positioned at c.
func (c Cursor) Before(e *Event) bool {
	return c.IsZero() || (&Event{At: c.At, ID: c.ID}).Before(e)
}
