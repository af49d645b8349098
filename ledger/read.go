package ledger

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
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

// Get returns one card.
func (b *Backlog) Get(id string) (c Card, err error) {
	if err := ValidID(id); err != nil {
		return Card{}, err
	}
	err = b.view(func(s *fold.State, now time.Time) error {
		var ok bool
		if c, ok = s.Card(id); !ok {
			return wire.Rule(ErrNotFound, "card %s not found", id)
		}
		c.View(now)
		return nil
	})
	return c, err
}

// List returns the cards matching f, in the given order (claim order when
// empty).
func (b *Backlog) List(f Filter, sortBy string) (cards []Card, err error) {
	if !fold.ValidSort(sortBy) {
		return nil, wire.Rule(ErrInvalid, "unknown sort %q: use claim, created, updated or id", sortBy)
	}
	err = b.view(func(s *fold.State, now time.Time) error {
		cards = s.List(f, now, sortBy)
		return nil
	})
	return cards, err
}

// ListEach hands fn the cards List returns, in its order, each with where
// it stands (as Standings reads it), one at a time: a list of 100k cards
// is neither copied nor held twice (bl list --json). The card is valid
// for the call only: fn must neither keep nor change it, and, running
// with the backlog locked, must not call b.
func (b *Backlog) ListEach(f Filter, sortBy string, fn func(c *Card, st Standing) error) error {
	if !fold.ValidSort(sortBy) {
		return wire.Rule(ErrInvalid, "unknown sort %q: use claim, created, updated or id", sortBy)
	}
	return b.view(func(s *fold.State, now time.Time) error {
		return s.EachListed(f, now, sortBy, func(c *wire.Card) error { return fn(c, s.Standing(c, now)) })
	})
}

// Ready returns the cards claimable now, in claim order.
func (b *Backlog) Ready(f Filter) ([]Card, error) {
	f.Ready = true
	return b.List(f, SortClaim)
}

// Stats summarises the backlog now.
func (b *Backlog) Stats() (st Stats, err error) {
	err = b.view(func(s *fold.State, now time.Time) error {
		st = s.Stats(now)
		var cerr error
		st.LedgerBytes, st.EventsSinceCompaction, st.Compactions, cerr = b.st.Counts()
		if cerr != nil {
			st.CompactError = cerr.Error()
		}
		if fi, err := os.Stat(filepath.Join(b.Dir(), SnapshotFile)); err == nil {
			at := fi.ModTime().UTC()
			st.SnapshotBytes, st.SnapshotAt, st.SnapshotAgeSeconds = fi.Size(), &at, now.Sub(at).Seconds()
		}
		return nil
	})
	return st, err
}

// Children is State.Children on the current state.
func (b *Backlog) Children(id string) (kids []Card, err error) {
	err = b.view(func(s *fold.State, _ time.Time) error {
		kids = s.Children(id)
		return nil
	})
	return kids, err
}

// PathHolds returns the live reservations now, in claim order.
func (b *Backlog) PathHolds() (out []Hold, err error) {
	err = b.view(func(s *fold.State, now time.Time) error {
		for _, c := range s.PathHolders(now) {
			h := Hold{Card: c.ID, Status: c.Status, Paths: slices.Clone(c.Paths)}
			if c.Status == StatusClaimed {
				h.Owner = c.ClaimOwner
			} else {
				h.Owner = c.SubmittedBy
			}
			out = append(out, h)
		}
		return nil
	})
	return out, err
}

// Standings derives where each of cards (copies read from this backlog)
// stands now, their dependencies as the state this handle last read or
// wrote holds them: the state the cards came from. It reads no file, so
// what a command prints after its write is the fold of that write.
func (b *Backlog) Standings(cards []Card) (out []Standing, err error) {
	err = b.st.Current(func(s *fold.State, now time.Time) error {
		b.policy(s)
		b.limitPaths(context.Background(), s, 0)
		out = make([]Standing, len(cards))
		if err := s.Resolve(func() {
			for i := range cards {
				out[i] = s.Standing(&cards[i], now)
			}
		}); err != nil {
			return err
		}
		return pathsInterrupted(context.Background(), s)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NextWake is State.NextWake on the current state.
func (b *Backlog) NextWake() (t time.Time, err error) {
	err = b.view(func(s *fold.State, now time.Time) error {
		t = s.NextWake(now)
		return nil
	})
	return t, err
}

// LinksTo is State.LinksTo on the current state.
func (b *Backlog) LinksTo(id string) (in []Link, err error) {
	err = b.view(func(s *fold.State, _ time.Time) error {
		in = s.LinksTo(id)
		return nil
	})
	return in, err
}
