package ledger

import (
	"errors"
	"time"
)

// State is the fold of a ledger: every card as of the last applied event.
// It is built only by Apply, which reads no clock, so the same events always
// give the same State.
//
// A state loaded through the snapshot index starts with its maps empty and
// reads snapshot lines as they are first needed (base); the maps then hold
// what was read or changed since. The snapshot file is immutable and held
// open, so this is the same fold, read lazily. A failed read is kept in err
// and surfaces before anything is written or returned.
type State struct {
	cards      map[string]*Card
	keys       map[string]string  // idempotency key -> card id
	requests   map[string]Receipt // request id -> what it did
	conflicts  []Conflict
	conflictOf map[string]int // event id -> index in conflicts
	events     int64
	last       Event // the last event folded, applied or not

	base    *snapshotIndex // snapshot lines not read yet; nil once all are in the maps
	created int            // cards created since base was taken
	err     error          // the first failed read from base
}

// Receipt records what a request id did, so a replay can answer without
// appending.
type Receipt struct {
	Event   string    `json:"event"`
	At      time.Time `json:"at"`
	Op      Op        `json:"op"`
	Card    string    `json:"card"`
	Epoch   int64     `json:"epoch"`
	Version int64     `json:"version"`
}

// NewState returns the state of an empty ledger.
func NewState() *State {
	return &State{cards: map[string]*Card{}, keys: map[string]string{}, requests: map[string]Receipt{}, conflictOf: map[string]int{}}
}

// Apply folds one event. An event that fails validation changes nothing and
// is recorded as a conflict; the returned error says why (nil when applied).
func (s *State) Apply(e *Event) error {
	s.events++
	s.last = *e
	k, ok := kinds[e.Op]
	if !ok {
		err := rule(ErrInvalid, "unknown op %q", e.Op)
		s.recordConflict(e, err)
		return err
	}
	if err := s.check(k, e); err != nil {
		s.recordConflict(e, err)
		return err
	}
	c := s.card(e.Card)
	if c == nil { // create
		c = &Card{ID: e.Card}
		s.cards[e.Card] = c
		s.created++
	}
	k.apply(s, c, e)
	c.Version++
	c.UpdatedAt = e.clock()
	if e.RequestID != "" {
		s.requests[e.RequestID] = Receipt{Event: e.ID, At: e.At, Op: e.Op, Card: e.Card, Epoch: c.ClaimEpoch, Version: c.Version}
	}
	return nil
}

// Check validates e against the state without applying it. The writer runs
// it before appending; the fold runs the same rules when applying.
func (s *State) Check(e *Event) error {
	k, ok := kinds[e.Op]
	if !ok {
		return rule(ErrInvalid, "unknown op %q", e.Op)
	}
	return s.check(k, e)
}

func (s *State) check(k kind, e *Event) error {
	c := s.card(e.Card)
	if e.Op != OpCreate && c == nil {
		return rule(ErrNotFound, "card %s not found", e.Card)
	}
	if err := k.check(s, c, e); err != nil {
		return err
	}
	return s.checkCardSize(k, c, e)
}

func (s *State) recordConflict(e *Event, err error) {
	s.recordConflictEntry(Conflict{
		Event: e.ID, At: e.At.Format(time.RFC3339Nano), Op: e.Op, Card: e.Card, Actor: e.Actor, Reason: err.Error(),
	})
}

func (s *State) recordConflictEntry(c Conflict) {
	s.conflictOf[c.Event] = len(s.conflicts)
	s.conflicts = append(s.conflicts, c)
}

// ConflictOf returns the conflict recorded for an event, if the fold
// refused it.
func (s *State) ConflictOf(eventID string) (Conflict, bool) {
	i, ok := s.conflictOf[eventID]
	if !ok {
		return Conflict{}, false
	}
	return s.conflicts[i], true
}

// Card returns a copy of the card with the given id.
func (s *State) Card(id string) (Card, bool) {
	c := s.card(id)
	if c == nil {
		return Card{}, false
	}
	return c.clone(), true
}

// card returns the card with the given id, reading it from the snapshot on
// first use; nil when there is none.
func (s *State) card(id string) *Card {
	if c, ok := s.cards[id]; ok || s.base == nil {
		return c
	}
	c, err := s.base.card(id)
	if err != nil {
		s.fail(err)
		return nil
	}
	if c != nil {
		s.cards[id] = c
	}
	return c
}

// keyOwner returns the id of the card created with an idempotency key.
func (s *State) keyOwner(key string) (string, bool) {
	if id, ok := s.keys[key]; ok || s.base == nil {
		return id, ok
	}
	id, ok, err := s.base.keyOwner(key)
	if err != nil {
		s.fail(err)
	}
	return id, ok
}

func (s *State) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Err is the first error reading the snapshot lazily; a state with an
// error must not be trusted.
func (s *State) Err() error { return s.err }

// all reads whatever the snapshot still holds into the maps, for the
// callers that look at every card or receipt.
func (s *State) all() {
	if s.base == nil {
		return
	}
	base := s.base
	s.base = nil
	if err := base.readAll(s); err != nil {
		s.fail(err)
	}
	base.close()
}

// Len is the number of cards.
func (s *State) Len() int {
	if s.base != nil {
		return s.base.cards.n + s.created
	}
	return len(s.cards)
}

// Events is the number of events folded, conflicts included.
func (s *State) Events() int64 { return s.events }

// Conflicts returns the events that were folded but not applied.
func (s *State) Conflicts() []Conflict { return append([]Conflict(nil), s.conflicts...) }

// Receipt returns what an earlier request with this id did.
func (s *State) Receipt(requestID string) (Receipt, bool) {
	if r, ok := s.requests[requestID]; ok || s.base == nil {
		return r, ok
	}
	r, ok, err := s.base.receipt(requestID)
	if err != nil {
		s.fail(err)
	}
	return r, ok
}

// CardByKey returns the card created with the given idempotency key.
func (s *State) CardByKey(key string) (Card, bool) {
	id, ok := s.keyOwner(key)
	if !ok {
		return Card{}, false
	}
	return s.Card(id)
}

// Last is the last event folded; the zero Event for an empty ledger.
func (s *State) Last() Event { return s.last }

// Fold applies events in order to a new state.
func Fold(events []*Event) *State {
	s := NewState()
	for _, e := range events {
		_ = s.Apply(e) // a failed check is recorded as a conflict
	}
	return s
}

// IsConflict reports whether err is a validation failure the fold records
// as a conflict rather than damage.
func IsConflict(err error) bool {
	var r *ruleError
	return errors.As(err, &r)
}
