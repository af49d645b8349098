package ledger

import (
	"testing"
	"time"
)

// TestWriteBatch: a batch is checked event by event with the ones before
// it applied (a note on a card the batch creates), and is appended whole
// or not at all; a check-only batch appends nothing and leaves the handle
// reading the file. Source times fold onto the card and the note.
func TestWriteBatch(t *testing.T) {
	e := newEnv(t)
	src := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	title := "imported"
	batch := func(bad bool) []*Event {
		evs := []*Event{
			{Op: OpCreate, Card: "A1", Actor: "ann", Fields: &Fields{Title: &title, IdempotencyKey: "beads:a1", SourceCreatedAt: &src, SourceClosedAt: &src}},
			{Op: OpNote, Card: "A1", Actor: "bo", Text: "seen it", SourceAt: &src},
			{Op: OpComplete, Card: "A1", Reason: "shipped"},
			{Op: OpLink, Card: "A1", To: "A1", LinkType: LinkRelated},
		}
		if !bad {
			evs = evs[:3]
		}
		return evs
	}
	// A link of a card to itself is refused: nothing of the batch lands.
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.WriteBatch(e.ctx, m, batch(true), false)
		return err
	})
	e.unchanged(nil, func(e *env) error {
		_, err := e.b.WriteBatch(e.ctx, m, batch(false), true)
		return err
	})
	if _, err := e.b.Get("A1"); err == nil {
		t.Fatal("A1 exists after a refused batch and a check-only one")
	}
	if _, err := e.b.WriteBatch(e.ctx, m, batch(false), false); err != nil {
		t.Fatal(err)
	}
	if n := len(e.lines()); n != 3 {
		t.Fatalf("%d lines, want 3", n)
	}
	for _, b := range []*Backlog{e.b, e.open()} { // this handle, and a fresh read of the file
		c, err := b.Get("A1")
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != StatusDone || c.SourceCreatedAt == nil || !c.SourceCreatedAt.Equal(src) || c.SourceClosedAt == nil ||
			len(c.Notes) != 1 || c.Notes[0].Author != "bo" || c.Notes[0].SourceAt == nil || !c.Notes[0].SourceAt.Equal(src) {
			t.Errorf("card %+v", c)
		}
		if !c.Created().Equal(src) {
			t.Errorf("Created() = %v, want the source's %v", c.Created(), src)
		}
	}
}
