package ledger

import (
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// CardsNamed returns the ids of the cards a word a person typed names,
// sorted: the card with that id; else the cards imported with it as their
// source's key (beads:bd-44d0 for bd-44d0); else, for a word of four
// characters or more, the cards whose id starts with it, the "bl-" of a
// generated id left out or not (c107 for bl-c10704nf). Live cards come
// before deleted ones. One id is the card; none or several are for the
// caller to explain.
func (b *Backlog) CardsNamed(word string) (ids []string, err error) {
	err = b.view(func(s *fold.State, _ time.Time) error {
		ids = s.CardsNamed(word)
		return nil
	})
	return ids, err
}
