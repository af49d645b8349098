package fold

import (
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"time"
)

// State is the fold of a ledger: every card as of the last applied event.
// It is built only by Apply, which reads no clock, so the same events always
// give the same State.
//
// A state loaded through the snapshot index starts with its maps empty and
// reads snapshot lines as they are first needed, from its source; the maps
// then hold what was read or changed since. The snapshot file is immutable
// and held open, so this is the same fold, read lazily. The fold itself
// never reads: Apply and Check read what an event needs first (resolve,
// reads.go) and return a read that fails before anything is folded.
//
// The store (package ledger) builds, reads and folds into a State through
// methods exported only because it is another package: Prepare, Fold,
// FoldEvent, Resolve, TakeFault, ReadCard, All, Release, RecountChildren,
// SnapshotLines, SetSource, SetClaimEpics and the Restore methods. Callers
// outside the ledger never hold a fold.State: ledger.State wraps it with
// the queries and Apply and Check alone.
type State struct {
	cards      map[string]*wire.Card
	lines      []CardLine              // cards not decoded yet, by id (restore.go)
	undecoded  int                     // how many of lines
	keys       map[string]string       // idempotency key -> card id
	requests   map[string]wire.Receipt // request id -> what it did
	conflicts  []wire.Conflict
	conflictOf map[string]int // event id -> index in conflicts
	events     int64
	last       wire.Event // the last event folded, applied or not

	src     CardSource // what the snapshot holds that the maps lack; nil when they hold everything
	created int        // cards created since the source's snapshot
	lz      lazyReads  // what has been read from src (reads.go)

	// claimEpics: epics.wait_for_children is false, so open children do
	// not hold an epic back (a rule of selection, never of the fold).
	claimEpics bool
	held       heldCache // the path holders, as last computed (paths.go)
	paths      pathsWork // the overlap decisions of a call (paths.go)
}

// NewState returns the state of an empty ledger.
func NewState() *State {
	return &State{cards: map[string]*wire.Card{}, keys: map[string]string{}, requests: map[string]wire.Receipt{}, conflictOf: map[string]int{}}
}

// Apply folds one event. An event that fails validation changes nothing and
// is recorded as a conflict; the returned error says why (nil when applied).
// A snapshot line the event needs that cannot be read is returned as that
// error, with the state left as it was and nothing recorded: the fold
// cannot go on.
func (s *State) Apply(e *wire.Event) error {
	conflict, err := s.FoldEvent(e)
	if err != nil {
		return err
	}
	return conflict
}

// FoldEvent is Apply telling the two failures apart: conflict is why the
// event was refused (and recorded), err a snapshot line that could not be
// read (and nothing changed).
func (s *State) FoldEvent(e *wire.Event) (conflict, err error) {
	var c *wire.Card
	if err := s.Resolve(func() { c, conflict = s.Prepare(e) }); err != nil {
		return nil, err
	}
	return s.Fold(e, c, conflict), nil
}

// prepare runs the rules of e on the state and reads what applying it
// reads: the cards it touches and, for a rule that scans (cycles, epics),
// the cards the scan visits. c is the card e names; conflict why the
// rules refuse e.
func (s *State) Prepare(e *wire.Event) (c *wire.Card, conflict error) {
	k, ok := kinds[e.Op]
	if !ok {
		return nil, wire.Rule(wire.ErrInvalid, "unknown op %q", e.Op)
	}
	c = s.Find(e.Card)
	if s.pending() {
		return nil, nil // the card is read before the rules run
	}
	if conflict = s.checkCard(k, c, e); conflict != nil {
		return c, conflict
	}
	// The parents whose counts of open children applying e may change.
	if c != nil && c.Parent != "" {
		s.Find(c.Parent)
	}
	if e.Fields != nil && e.Fields.Parent != nil && *e.Fields.Parent != "" {
		s.Find(*e.Fields.Parent)
	}
	return c, nil
}

// fold applies e, which prepare checked (conflict is its verdict) with
// everything it reads in memory: it reads nothing.
func (s *State) Fold(e *wire.Event, c *wire.Card, conflict error) error {
	s.events++
	s.last = *e
	if conflict != nil {
		s.recordConflict(e, conflict)
		return conflict
	}
	parent, open := "", false
	if c == nil { // create
		c = &wire.Card{ID: e.Card}
		s.cards[e.Card] = c
		s.created++
	} else {
		parent, open = c.Parent, c.OpenChild()
	}
	kinds[e.Op].apply(s, c, e)
	s.trackChildren(c, parent, open)
	c.Version++
	c.UpdatedAt = e.WriterClock()
	if e.RequestID != "" {
		s.requests[e.RequestID] = wire.Receipt{Event: e.ID, At: e.At, Op: e.Op, Card: e.Card, Epoch: c.ClaimEpoch, Version: c.Version}
	}
	return nil
}

// Check validates e against the state without applying it. The writer runs
// it before appending; the fold runs the same rules when applying. A
// snapshot line that cannot be read is returned as that error.
func (s *State) Check(e *wire.Event) error {
	var conflict error
	if err := s.Resolve(func() { _, conflict = s.Prepare(e) }); err != nil {
		return err
	}
	return conflict
}

// checkCard runs the rules of k for e on c, the card e names (nil when
// there is none).
func (s *State) checkCard(k kind, c *wire.Card, e *wire.Event) error {
	if e.Op != wire.OpCreate && c == nil {
		return wire.Rule(wire.ErrNotFound, "card %s not found", e.Card)
	}
	if err := CheckDeleted(c, e); err != nil {
		return err
	}
	if err := k.check(s, c, e); err != nil {
		return err
	}
	// a scratch state: apply may record in it
	return wire.CheckCardSize(c, e, func(p *wire.Card) { k.apply(NewState(), p, e) })
}

// recordConflict records e, which the fold refused for err, with the
// event's own times, the owner who lost and, for an event that names an
// owner when someone else held the card at that point, who did.
func (s *State) recordConflict(e *wire.Event, err error) {
	c := wire.Conflict{Event: e.ID, At: e.At.Format(time.RFC3339Nano), Op: e.Op, Card: e.Card, Actor: e.Actor, Owner: e.Owner, Reason: err.Error()}
	if e.Clock != nil {
		c.Clock = e.Clock.UTC().Format(time.RFC3339Nano)
	}
	// The fold has looked the card up already (a known op), so the map
	// holds it if it exists: no read here can fail.
	if card := s.cards[e.Card]; e.Owner != "" && card != nil && card.Status == wire.StatusClaimed && card.ClaimOwner != e.Owner {
		c.Winner = card.ClaimOwner
	}
	s.recordConflictEntry(c)
}

func (s *State) recordConflictEntry(c wire.Conflict) {
	s.conflictOf[c.Event] = len(s.conflicts)
	s.conflicts = append(s.conflicts, c)
}

// ConflictOf returns the conflict recorded for an event, if the fold
// refused it.
func (s *State) ConflictOf(eventID string) (wire.Conflict, bool) {
	i, ok := s.conflictOf[eventID]
	if !ok {
		return wire.Conflict{}, false
	}
	return s.conflicts[i], true
}

// Card returns a copy of the card with the given id.
func (s *State) Card(id string) (wire.Card, bool) {
	c := s.Find(id)
	if c == nil {
		return wire.Card{}, false
	}
	return c.Clone(), true
}

// Len is the number of cards.
func (s *State) Len() int {
	if s.src != nil {
		return s.src.Count() + s.created
	}
	return len(s.mem())
}

// Events is the number of events folded, conflicts included.
func (s *State) Events() int64 { return s.events }

// Conflicts returns the events that were folded but not applied.
func (s *State) Conflicts() []wire.Conflict { return append([]wire.Conflict(nil), s.conflicts...) }

// CardByKey returns the card created with the given idempotency key.
func (s *State) CardByKey(key string) (wire.Card, bool) {
	id, ok := s.KeyOwner(key)
	if !ok {
		return wire.Card{}, false
	}
	return s.Card(id)
}

// Last is the last event folded; the zero Event for an empty ledger.
func (s *State) Last() wire.Event { return s.last }

// release closes the snapshot a lazily read state holds open; reads from
// it fail after.
func (s *State) Release() {
	if s != nil && s.src != nil {
		s.src.Close()
		s.src = releasedSource{}
	}
}

// Fold applies events in order to a new state.
func Fold(events []*wire.Event) *State {
	s := NewState()
	for _, e := range events {
		_ = s.Apply(e) // a failed check is recorded as a conflict
	}
	return s
}
