package ledger

import "time"

// State is the fold of a ledger: every card as of the last applied event.
// It is built only by Apply, which reads no clock, so the same events always
// give the same State.
//
// A state loaded through the snapshot index starts with its maps empty and
// reads snapshot lines as they are first needed, from its source; the maps
// then hold what was read or changed since. The snapshot file is immutable
// and held open, so this is the same fold, read lazily. A read that fails
// stops the call that needed it, which returns the error (see readFailure).
type State struct {
	cards      map[string]*Card
	keys       map[string]string  // idempotency key -> card id
	requests   map[string]Receipt // request id -> what it did
	conflicts  []Conflict
	conflictOf map[string]int // event id -> index in conflicts
	events     int64
	last       Event // the last event folded, applied or not

	src     cardSource // what the snapshot holds that the maps lack; nil when they hold everything
	created int        // cards created since the source's snapshot

	// claimEpics: epics.wait_for_children is false, so open children do
	// not hold an epic back (a rule of selection, never of the fold).
	claimEpics bool
	held       heldCache // the path holders, as last computed (paths.go)
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
// A snapshot line that cannot be read is returned as that error, with the
// state left as it was and nothing recorded: the fold cannot go on.
func (s *State) Apply(e *Event) error {
	conflict, err := s.fold(e)
	if err != nil {
		return err
	}
	return conflict
}

// fold is Apply telling the two failures apart: conflict is why the event
// was refused (and recorded), err a snapshot line that could not be read
// (and nothing changed).
func (s *State) fold(e *Event) (conflict, err error) {
	defer returnFailure(&err)
	var c *Card
	if k, ok := kinds[e.Op]; !ok {
		conflict = rule(ErrInvalid, "unknown op %q", e.Op)
	} else {
		c = s.card(e.Card)
		conflict = s.checkCard(k, c, e)
	}
	s.events++
	s.last = *e
	if conflict != nil {
		s.recordConflict(e, conflict)
		return conflict, nil
	}
	parent, open := "", false
	if c == nil { // create
		c = &Card{ID: e.Card}
		s.cards[e.Card] = c
		s.created++
	} else {
		parent, open = c.Parent, c.openChild()
	}
	kinds[e.Op].apply(s, c, e)
	s.trackChildren(c, parent, open)
	c.Version++
	c.UpdatedAt = e.clock()
	if e.RequestID != "" {
		s.requests[e.RequestID] = Receipt{Event: e.ID, At: e.At, Op: e.Op, Card: e.Card, Epoch: c.ClaimEpoch, Version: c.Version}
	}
	return nil, nil
}

// Check validates e against the state without applying it. The writer runs
// it before appending; the fold runs the same rules when applying. A
// snapshot line that cannot be read is returned as that error.
func (s *State) Check(e *Event) (err error) {
	defer returnFailure(&err)
	k, ok := kinds[e.Op]
	if !ok {
		return rule(ErrInvalid, "unknown op %q", e.Op)
	}
	return s.checkCard(k, s.card(e.Card), e)
}

// checkCard runs the rules of k for e on c, the card e names (nil when
// there is none).
func (s *State) checkCard(k kind, c *Card, e *Event) error {
	if e.Op != OpCreate && c == nil {
		return rule(ErrNotFound, "card %s not found", e.Card)
	}
	if err := checkDeleted(c, e); err != nil {
		return err
	}
	if err := k.check(s, c, e); err != nil {
		return err
	}
	return s.checkCardSize(k, c, e)
}

// recordConflict records e, which the fold refused for err, with the
// event's own times, the owner who lost and, for an event that names an
// owner when someone else held the card at that point, who did.
func (s *State) recordConflict(e *Event, err error) {
	c := Conflict{Event: e.ID, At: e.At.Format(time.RFC3339Nano), Op: e.Op, Card: e.Card, Actor: e.Actor, Owner: e.Owner, Reason: err.Error()}
	if e.Clock != nil {
		c.Clock = e.Clock.UTC().Format(time.RFC3339Nano)
	}
	// The fold has looked the card up already (a known op), so the map
	// holds it if it exists: no read here can fail.
	if card := s.cards[e.Card]; e.Owner != "" && card != nil && card.Status == StatusClaimed && card.ClaimOwner != e.Owner {
		c.Winner = card.ClaimOwner
	}
	s.recordConflictEntry(c)
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

// lookup returns the card with the given id, reading it from the source on
// first use; nil when there is none.
func (s *State) lookup(id string) (*Card, error) {
	if c, ok := s.cards[id]; ok || s.src == nil {
		return c, nil
	}
	c, err := s.src.card(id)
	if c != nil {
		s.cards[id] = c
	}
	return c, err
}

// card is lookup for the op rules and the selections, which return rule
// errors, not read errors: a read that fails unwinds to the entry point
// (see readFailure).
func (s *State) card(id string) *Card {
	c, err := s.lookup(id)
	must(err)
	return c
}

// keyOwner returns the id of the card created with an idempotency key.
func (s *State) keyOwner(key string) (string, bool) {
	if id, ok := s.keys[key]; ok || s.src == nil {
		return id, ok
	}
	id, ok, err := s.src.keyOwner(key)
	must(err)
	return id, ok
}

// all reads whatever the source still holds into the maps, for the callers
// that look at every card or receipt, and drops the source.
func (s *State) all() {
	if s.src == nil {
		return
	}
	must(s.src.fill(s.cards, s.requests))
	for id, c := range s.cards {
		if c.IdempotencyKey != "" {
			s.keys[c.IdempotencyKey] = id
		}
	}
	s.src.close()
	s.src = nil
}

// Len is the number of cards.
func (s *State) Len() int {
	if s.src != nil {
		return s.src.count() + s.created
	}
	return len(s.cards)
}

// Events is the number of events folded, conflicts included.
func (s *State) Events() int64 { return s.events }

// Conflicts returns the events that were folded but not applied.
func (s *State) Conflicts() []Conflict { return append([]Conflict(nil), s.conflicts...) }

// Receipt returns what an earlier request with this id did.
func (s *State) Receipt(requestID string) (Receipt, bool) {
	if r, ok := s.requests[requestID]; ok || s.src == nil {
		return r, ok
	}
	r, ok, err := s.src.receipt(requestID)
	must(err)
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

// release closes the snapshot a lazily read state holds open; reads from
// it fail after.
func (s *State) release() {
	if s != nil && s.src != nil {
		s.src.close()
		s.src = releasedSource{}
	}
}

// Fold applies events in order to a new state.
func Fold(events []*Event) *State {
	s := NewState()
	for _, e := range events {
		_ = s.Apply(e) // a failed check is recorded as a conflict
	}
	return s
}
