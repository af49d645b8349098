package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"github.com/bl-backlog/bl/lock"
)

// ErrLockTimeout is (wrapped) the error of a write whose wait for the
// writers' lock ran out: nothing was written.
var ErrLockTimeout = lock.ErrTimeout

// A staged write is built, stamped and checked under the writers' lock
// like any other, then handed back unappended, so that the caller can make
// it public elsewhere (a git remote's lease ref) with the lock released —
// no network call happens under the lock — and append it afterwards with
// AppendStaged, which checks it still holds.
type Staged struct {
	Events []*Event // as every reader decodes them
	Lines  []byte   // their ledger lines, as AppendStaged appends them
}

// StageCheck runs under the writers' lock on a write about to be staged,
// with the state it was checked against; an error is the write's error and
// stages nothing.
type StageCheck func(st *State, w *Staged) error

// errStaged is what a write made under Stage's context returns once it
// is staged.
var errStaged = errors.New("ledger: write staged, not appended")

// ErrStageMoved (wrapped) is AppendStaged's refusal: the state gained an
// event at or after the staged write's stamp, or the write no longer
// checks. Nothing was appended.
var ErrStageMoved = errors.New("the backlog moved since the write was staged")

// Stage runs fn with a context of its own: the first write through b made
// with that context (or one derived from it) is staged instead of
// appended — checked by check and returned to Stage's caller. Writes made
// meanwhile with any other context, on any goroutine, append as usual: a
// stage belongs to its call, never to the handle. A replayed request (its
// request id already folded) stages nothing: fn gets its answer as usual
// and Stage returns nil.
func (b *Backlog) Stage(ctx context.Context, check StageCheck, fn func(ctx context.Context) error) (*Staged, error) {
	st := &stage{b: b, check: check}
	err := fn(context.WithValue(ctx, stageKey{}, st))
	st.mu.Lock()
	w := st.staged
	st.mu.Unlock()
	if w != nil {
		return w, nil
	}
	return nil, err
}

// stage is one Stage call's slot, carried by its context.
type stage struct {
	b      *Backlog // the handle whose write is staged
	mu     sync.Mutex
	check  StageCheck // nil once a write was staged (under mu)
	staged *Staged    // (under mu)
}

type stageKey struct{}

// stageOf returns the stage a write on b made with ctx goes to, nil when
// it appends.
func (b *Backlog) stageOf(ctx context.Context) *stage {
	st, _ := ctx.Value(stageKey{}).(*stage)
	if st == nil || st.b != b {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.check == nil {
		return nil
	}
	return st
}

// stage keeps w as the stage's write: a later write with its context
// appends.
func (st *stage) stage(w *Staged) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.check, st.staged = nil, w
}

// AppendStaged appends a staged write and returns the cards it touched, as
// they stand after it. The write must still hold: every event after the
// newest the state holds, and each still checking against it; otherwise
// nothing is appended and the error wraps ErrStageMoved. A write already
// folded (a pull brought it in from where it was published) is answered
// as it stands (the request id's receipt names its first event). A
// completion then closes the epics it finished (epics.auto_close), as
// completeRollingUp does.
func (b *Backlog) AppendStaged(ctx context.Context, w *Staged) (cards []Card, err error) {
	if len(w.Events) == 0 {
		return nil, nil
	}
	err = b.st.Locked(ctx, func(s *fold.State) error {
		if e := w.Events[0]; e.RequestID != "" {
			if r, ok := s.Receipt(e.RequestID); ok && r.Event == e.ID {
				cards = b.st.CardsOf(w.Events)
				b.rollUpStaged(ctx, s, w, cards)
				return nil
			}
		}
		if last := s.Last(); last.ID != "" && !last.Before(w.Events[0]) {
			return fmt.Errorf("%w: %s came after it", ErrStageMoved, last.ID)
		}
		for _, e := range w.Events {
			if err := s.Check(e); err != nil {
				return fmt.Errorf("%w: %w", ErrStageMoved, err)
			}
		}
		if cards, err = b.st.Append(ctx, w.Events, w.Lines); err == nil {
			b.rollUpStaged(ctx, s, w, cards)
		}
		return err
	})
	return cards, err
}

// rollUpStaged closes the epics a staged completion finished, as a
// completion appended at once does (completeRollingUp): staging stopped
// at the completion's own events.
func (b *Backlog) rollUpStaged(ctx context.Context, s *fold.State, w *Staged, cards []Card) {
	for _, e := range w.Events {
		if e.Op == OpComplete {
			b.rollUp(ctx, s, Mutation{Actor: e.Actor}, cards)
			return
		}
	}
}

// WriteBatch appends events as one write under the lock, each checked
// against the state with the events before it applied (a note on a card
// the batch creates checks), so it writes all of them or none. An event
// keeps the actor it names (an imported note's author); the others take
// m's; a link's type is named as LinkTyped names it. A claim with no
// epoch takes the card's next lease. A batch never compacts: the caller
// calls CompactDue after its last batch. With checkOnly nothing is
// appended and no cards are returned: the batch is checked exactly as a
// write would be. bl import writes through it.
func (b *Backlog) WriteBatch(ctx context.Context, m Mutation, events []*Event, checkOnly bool) (cards []Card, err error) {
	if m.Actor == "" {
		return nil, wire.Rule(ErrInvalid, "an actor is required")
	}
	if len(events) == 0 {
		return nil, nil
	}
	return b.st.WriteBatch(ctx, m.Actor, events, checkOnly)
}

// CompactDue compacts once the ledger has outgrown the configured size,
// as a single write does after appending: bl import calls it after its
// last batch. A failure is kept for Stats, as a write's is.
func (b *Backlog) CompactDue(ctx context.Context) error { return b.st.CompactDue(ctx) }

// CheckBatches checks the batches next returns, until it returns none, as
// one batch: each checked with every event before it applied, nothing
// appended. Building the events batch by batch keeps an import's check
// of 100,000 issues from holding all their events at once. next gets the
// state with the batches before applied, as View gives it (it must not
// keep it nor call b): an import reads each issue's card as it plans it,
// rather than copying every card up front.
func (b *Backlog) CheckBatches(ctx context.Context, m Mutation, next func(s *State, now time.Time) []*Event) error {
	if m.Actor == "" {
		return wire.Rule(ErrInvalid, "an actor is required")
	}
	return b.st.CheckBatches(ctx, m.Actor, func(s *fold.State, now time.Time) []*Event { return next(&State{s}, now) })
}
