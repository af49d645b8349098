package fold

import (
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Change is one field of a card with its value before and after: what an
// update replaced, or what changed between two versions of a backlog. Old
// and New are a string, an int, an int64, a Status, a []string (never nil),
// a time.Time, or nil for a time or number the card does not have.
type Change struct {
	Field string `json:"field"`
	Old   any    `json:"old"`
	New   any    `json:"new"`
}

// cardField is one field a reviewer compares, by its JSON name.
type cardField struct {
	name string
	get  func(c *wire.Card) any
	// lease is set for the fields that change with every claim and
	// heartbeat, which a per-card diff reports as the lease's story
	// (claimed by, done) rather than field by field.
	lease bool
}

// cardFields are the card's fields in the order a change list shows them.
// The ones an update can set come first.
var cardFields = []cardField{
	{name: "title", get: func(c *wire.Card) any { return c.Title }},
	{name: "body", get: func(c *wire.Card) any { return c.Body }},
	{name: "phase", get: func(c *wire.Card) any { return c.Phase }},
	{name: "priority", get: func(c *wire.Card) any { return c.Priority }},
	{name: "labels", get: func(c *wire.Card) any { return nonNilStrings(c.Labels) }},
	{name: "depends_on", get: func(c *wire.Card) any { return nonNilStrings(c.DependsOn) }},
	{name: "parent", get: func(c *wire.Card) any { return c.Parent }},
	{name: "acceptance", get: func(c *wire.Card) any { return nonNilStrings(c.Acceptance) }},
	{name: "max_attempts", get: func(c *wire.Card) any { return c.MaxAttempts }},
	{name: "defer_until", get: func(c *wire.Card) any { return timeValue(c.DeferUntil) }},
	{name: "assignee", get: func(c *wire.Card) any { return c.Assignee }},
	{name: "source_created_at", get: func(c *wire.Card) any { return timeValue(c.SourceCreatedAt) }},
	{name: "source_updated_at", get: func(c *wire.Card) any { return timeValue(c.SourceUpdatedAt) }},
	{name: "source_closed_at", get: func(c *wire.Card) any { return timeValue(c.SourceClosedAt) }},
	{name: "status", get: func(c *wire.Card) any { return c.Status }},
	{name: "blocked_reason", get: func(c *wire.Card) any { return c.BlockedReason }},
	{name: "close_note", get: func(c *wire.Card) any { return c.CloseNote }},
	{name: "claim_owner", get: func(c *wire.Card) any { return c.ClaimOwner }, lease: true},
	{name: "claim_epoch", get: func(c *wire.Card) any { return c.ClaimEpoch }, lease: true},
	{name: "attempts", get: func(c *wire.Card) any { return c.Attempts }, lease: true},
	{name: "progress", get: func(c *wire.Card) any { return intValue(c.Progress) }, lease: true},
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func timeValue(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

func intValue(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// sameValue compares two values a cardField returns.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []string:
		y, ok := b.([]string)
		return ok && slices.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return a == b
}

// CardChanges lists the fields that differ between two versions of a card,
// in a fixed order: title, body, phase, priority, labels, depends_on,
// parent, acceptance, max_attempts, defer_until, status, blocked_reason,
// close_note, then with lease set also claim_owner, claim_epoch, attempts
// and progress. Times kept by the fold (created_at, updated_at, the lease's
// times) and the version are never listed.
func CardChanges(old, new *wire.Card, lease bool) []Change {
	var out []Change
	for _, f := range cardFields {
		if f.lease && !lease {
			continue
		}
		if o, n := f.get(old), f.get(new); !sameValue(o, n) {
			out = append(out, Change{Field: f.name, Old: o, New: n})
		}
	}
	return out
}

// Changes folds events in (at, id) order to say what each update replaced:
// the ledger stores only the values an update sets, so the old ones come
// from the fold of everything before it. It is the same fold as a
// backlog's, so an update the fold refuses replaces nothing.
type Changes struct {
	s    *State
	last wire.Cursor // the newest event folded
}

// NewChanges starts at the beginning of history.
func NewChanges() *Changes { return &Changes{s: NewState()} }

// Step folds e and returns, for an update the fold applied, the fields it
// changed with their values before and after (nil for anything else), and
// the fold's verdict on e: nil when it applied, else why it was refused.
func (c *Changes) Step(e *wire.Event) ([]Change, error) {
	var before wire.Card
	var had bool
	if e.Op == wire.OpUpdate {
		before, had = c.s.Card(e.Card)
	}
	err := c.s.Apply(e)
	if c.last.Before(e) {
		c.last = wire.CursorOf(e)
	}
	if err != nil || !had {
		return nil, err
	}
	after, _ := c.s.Card(e.Card)
	return CardChanges(&before, &after, false), nil
}

// Last is the cursor of the newest event folded.
func (c *Changes) Last() wire.Cursor { return c.last }
