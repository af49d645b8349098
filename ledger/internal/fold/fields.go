package fold

import (
	"fmt"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// The ops that set a card's fields, create and update, and the rules the
// fields obey.

// createdTwice is the reason a create of an id that exists is refused:
// when merged in, two clones created the id (see CreatedTwice).
const createdTwice = "card %s already exists"

// CreatedTwice reports whether c is a create refused because its card
// existed: two clones created one id and a git merge (not bl sync, which
// renames the unpushed one) brought both creates together. The card's
// later events folded onto the first card, whichever create their
// writer knew.
func CreatedTwice(c wire.Conflict) bool {
	return c.Op == wire.OpCreate && c.Reason == fmt.Sprintf(createdTwice, c.Card)
}

func checkCreate(s *State, c *wire.Card, e *wire.Event) error {
	if err := wire.ValidID(e.Card); err != nil {
		return err
	}
	if c != nil {
		return wire.Rule(wire.ErrConflict, createdTwice, e.Card)
	}
	f := e.Fields
	if f == nil || f.Title == nil || strings.TrimSpace(*f.Title) == "" {
		return wire.Rule(wire.ErrInvalid, "card %s needs a title", e.Card)
	}
	if k := f.IdempotencyKey; k != "" {
		if id, used := s.KeyOwner(k); used {
			return wire.Rule(wire.ErrConflict, "idempotency key %q already created card %s", k, id)
		}
	}
	return s.CheckFields(e.Card, f)
}

func applyCreate(s *State, c *wire.Card, e *wire.Event) {
	c.Status = wire.StatusReady
	c.Labels, c.DependsOn, c.Acceptance = []string{}, []string{}, []string{}
	c.CreatedAt = e.WriterClock()
	c.IdempotencyKey = e.Fields.IdempotencyKey
	if c.IdempotencyKey != "" {
		s.keys[c.IdempotencyKey] = c.ID
	}
	applyFields(s, c, e)
}

func checkUpdate(s *State, c *wire.Card, e *wire.Event) error {
	f := e.Fields
	if f == nil || *f == (wire.Fields{}) {
		return wire.Rule(wire.ErrInvalid, "update of %s changes nothing", e.Card)
	}
	if f.IdempotencyKey != "" {
		return wire.Rule(wire.ErrInvalid, "the idempotency key of %s cannot change", e.Card)
	}
	if f.Title != nil && strings.TrimSpace(*f.Title) == "" {
		return wire.Rule(wire.ErrInvalid, "card %s needs a title", e.Card)
	}
	return s.CheckFields(e.Card, f)
}

// CheckFields validates the fields a create or update sets on card id.
func (s *State) CheckFields(id string, f *wire.Fields) error {
	if err := checkSizes(id, f); err != nil {
		return err
	}
	if err := checkPaths(id, f.Paths); err != nil {
		return err
	}
	if f.Assignee != nil {
		if err := wire.ValidAssignee(*f.Assignee); err != nil {
			return err
		}
	}
	for _, t := range []*time.Time{f.SourceCreatedAt, f.SourceUpdatedAt, f.SourceClosedAt} {
		if err := wire.CheckSourceTime(id, t); err != nil {
			return err
		}
	}
	if f.Parent != nil && *f.Parent != "" {
		if err := s.checkParent(id, *f.Parent); err != nil {
			return err
		}
	}
	if f.DependsOn != nil {
		return s.checkDependsOn(id, *f.DependsOn)
	}
	return nil
}

// checkSizes holds the fields to the limits the wire format sets: text
// lengths, priority, attempts, list lengths and no empty list entries.
func checkSizes(id string, f *wire.Fields) error {
	if f.Title != nil && len(*f.Title) > wire.MaxTitleLen {
		return wire.Rule(wire.ErrInvalid, "title of %s is longer than %d bytes", id, wire.MaxTitleLen)
	}
	if f.Body != nil && len(*f.Body) > wire.MaxBodyLen {
		return wire.Rule(wire.ErrInvalid, "body of %s is longer than %d bytes", id, wire.MaxBodyLen)
	}
	if f.Priority != nil && (*f.Priority > wire.MaxPriority || *f.Priority < -wire.MaxPriority) {
		return wire.Rule(wire.ErrInvalid, "priority %d of %s is outside ±%d", *f.Priority, id, wire.MaxPriority)
	}
	if f.MaxAttempts != nil && *f.MaxAttempts < 0 {
		return wire.Rule(wire.ErrInvalid, "max_attempts of %s must be 0 (unlimited) or more", id)
	}
	for name, list := range map[string]*[]string{"labels": f.Labels, "acceptance": f.Acceptance, "depends_on": f.DependsOn} {
		if list == nil {
			continue
		}
		if len(*list) > wire.MaxListEntries {
			return wire.Rule(wire.ErrInvalid, "%s of %s has more than %d entries", name, id, wire.MaxListEntries)
		}
		for _, v := range *list {
			if strings.TrimSpace(v) == "" {
				return wire.Rule(wire.ErrInvalid, "%s of %s has an empty entry", name, id)
			}
		}
	}
	return nil
}

// checkParent refuses a parent that is the card itself, missing, or one
// that would make the parent chain a cycle.
func (s *State) checkParent(id, p string) error {
	if p == id {
		return wire.Rule(wire.ErrInvalid, "card %s cannot be its own parent", id)
	}
	if s.liveCard(p) == nil {
		return wire.Rule(wire.ErrNotFound, "parent card %s not found", p)
	}
	if cycle := s.parentCycle(id, p); cycle != nil {
		return wire.Rule(wire.ErrConflict, "parent %s of %s would make a cycle: %s", p, id, strings.Join(cycle, " → "))
	}
	return nil
}

// checkDependsOn refuses a dependency on the card itself, on a missing
// card, or one that would make a cycle.
func (s *State) checkDependsOn(id string, deps []string) error {
	for _, d := range deps {
		if d == id {
			return wire.Rule(wire.ErrInvalid, "card %s cannot depend on itself", id)
		}
		if s.liveCard(d) == nil {
			return wire.Rule(wire.ErrNotFound, "dependency %s of %s not found", d, id)
		}
		if cycle := s.depCycle(id, d); cycle != nil {
			return wire.Rule(wire.ErrConflict, "%s depending on %s would make a cycle: %s", id, d, strings.Join(cycle, " → "))
		}
	}
	return nil
}

// FieldsChange reports whether applying f would change c.
func FieldsChange(f *wire.Fields, c *wire.Card) bool {
	probe := c.Clone()
	applyFields(nil, &probe, &wire.Event{Fields: f})
	return !probe.SameFields(c)
}

// applyFields sets whatever fields the event carries.
func applyFields(_ *State, c *wire.Card, e *wire.Event) {
	f := e.Fields
	if f.Title != nil {
		c.Title = *f.Title
	}
	if f.Body != nil {
		c.Body = *f.Body
	}
	if f.Phase != nil {
		c.Phase = *f.Phase
	}
	if f.Priority != nil {
		c.Priority = *f.Priority
	}
	if f.Labels != nil {
		c.Labels = dedupe(*f.Labels)
	}
	if f.DependsOn != nil {
		c.DependsOn = dedupe(*f.DependsOn)
	}
	if f.Parent != nil {
		c.Parent = *f.Parent
	}
	if f.Acceptance != nil {
		c.Acceptance = wire.CloneStrings(*f.Acceptance)
	}
	if f.MaxAttempts != nil {
		c.MaxAttempts = *f.MaxAttempts
	}
	if f.Paths != nil {
		c.Paths = dedupe(*f.Paths)
	}
	if f.Assignee != nil {
		c.Assignee = *f.Assignee
	}
	if f.DeferUntil != nil {
		if f.DeferUntil.IsZero() {
			c.DeferUntil = nil
		} else {
			c.DeferUntil = wire.TimePtr(f.DeferUntil.UTC())
		}
	}
	setSourceTime(&c.SourceCreatedAt, f.SourceCreatedAt)
	setSourceTime(&c.SourceUpdatedAt, f.SourceUpdatedAt)
	setSourceTime(&c.SourceClosedAt, f.SourceClosedAt)
}

// setSourceTime sets one of an imported card's source times; a zero time
// clears it.
func setSourceTime(dst **time.Time, t *time.Time) {
	switch {
	case t == nil:
	case t.IsZero():
		*dst = nil
	default:
		*dst = wire.TimePtr(t.UTC())
	}
}
