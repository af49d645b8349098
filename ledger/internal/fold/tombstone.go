package fold

import (
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

func checkDelete(_ *State, c *wire.Card, e *wire.Event) error {
	if len(e.Reason) > wire.MaxNoteLen {
		return wire.Rule(wire.ErrInvalid, "reason for deleting %s is longer than %d bytes", c.ID, wire.MaxNoteLen)
	}
	return nil
}

func applyDelete(_ *State, c *wire.Card, e *wire.Event) {
	if c.Status == wire.StatusClaimed {
		c.ClearLease()
		c.Status = wire.StatusReady
	}
	c.DeletedAt = wire.TimePtr(e.WriterClock())
	c.DeleteReason = e.Reason
}

func checkRestore(_ *State, c *wire.Card, _ *wire.Event) error {
	if c.DeletedAt == nil {
		return wire.Rule(wire.ErrConflict, "card %s is not deleted", c.ID)
	}
	return nil
}

func applyRestore(_ *State, c *wire.Card, _ *wire.Event) {
	c.DeletedAt = nil
	c.DeleteReason = ""
}

// CheckDeleted refuses any op but restore (and create, which finds the id
// taken) on a deleted card.
func CheckDeleted(c *wire.Card, e *wire.Event) error {
	if c == nil || c.DeletedAt == nil || e.Op == wire.OpRestore || e.Op == wire.OpCreate {
		return nil
	}
	return wire.Rule(wire.ErrNotFound, "card %s is deleted; bl restore %s brings it back", c.ID, c.ID)
}

// Dependent is a card that names another: by depends_on or a holding
// link (Type), or as its parent (Type "parent").
type Dependent struct {
	ID, Type string
}

// dependents lists the live cards that depend on id or name it as parent,
// sorted. It reads every card.
func (s *State) Dependents(id string) []Dependent {
	s.All()
	var out []Dependent
	for _, c := range s.mem() {
		if c.DeletedAt != nil {
			continue
		}
		c.HoldingLinks(func(t, to string) bool {
			if to == id {
				out = append(out, Dependent{c.ID, t})
			}
			return true
		})
		if c.Parent == id {
			out = append(out, Dependent{c.ID, "parent"})
		}
	}
	slices.SortFunc(out, func(a, b Dependent) int {
		return strings.Compare(a.ID+"\x00"+a.Type, b.ID+"\x00"+b.Type)
	})
	return out
}
