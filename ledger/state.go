package ledger

import (
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// State is the fold of a ledger: every card as of the last event folded,
// for reading. Backlog.View hands one out under the writers' lock; Fold and
// NewState make one of your own. Its methods answer queries and fold events
// through the same rules a writer checks; the store's own (how it restores
// and reads a state lazily) stay in package fold.
type State struct{ s *fold.State }

// NewState returns the state of an empty ledger.
func NewState() *State { return &State{fold.NewState()} }

// Fold folds events, in order, into a new state.
func Fold(events []*Event) *State { return &State{fold.Fold(events)} }

// Apply folds one event. An event that fails validation changes nothing and
// is recorded as a conflict; the returned error says why (nil when applied).
// A snapshot line the event needs that cannot be read is returned as that
// error, with the state left as it was and nothing recorded: the fold cannot
// go on.
func (s *State) Apply(e *Event) error { return s.s.Apply(e) }

// Card returns a copy of the card with the given id.
func (s *State) Card(id string) (Card, bool) { return s.s.Card(id) }

// CardByKey returns the card created with the given idempotency key.
func (s *State) CardByKey(key string) (Card, bool) { return s.s.CardByKey(key) }

// Check validates e against the state without applying it. The writer runs
// it before appending; the fold runs the same rules when applying. A
// snapshot line that cannot be read is returned as that error.
func (s *State) Check(e *Event) error { return s.s.Check(e) }

// Children returns copies of the cards naming id as parent, deleted ones
// left out, in claim order. It reads every card.
func (s *State) Children(id string) []Card { return s.s.Children(id) }

// Claimable reports whether anyone may claim the card at now.
func (s *State) Claimable(id string, now time.Time) bool { return s.s.Claimable(id, now) }

// ConflictOf returns the conflict recorded for an event, if the fold refused
// it.
func (s *State) ConflictOf(eventID string) (Conflict, bool) { return s.s.ConflictOf(eventID) }

// Conflicts returns the events that were folded but not applied.
func (s *State) Conflicts() []Conflict { return s.s.Conflicts() }

// Events is the number of events folded, conflicts included.
func (s *State) Events() int64 { return s.s.Events() }

// Expired returns the ids of cards whose leases have run out at now, sorted.
func (s *State) Expired(now time.Time) []string { return s.s.Expired(now) }

// Last is the last event folded; the zero Event for an empty ledger.
func (s *State) Last() Event { return s.s.Last() }

// Len is the number of cards.
func (s *State) Len() int { return s.s.Len() }

// LinksTo returns the links other cards have to id, as links seen from id:
// {type, to: the card they are on}, sorted by type order, then id. It reads
// every card.
func (s *State) LinksTo(id string) []Link { return s.s.LinksTo(id) }

// List returns copies of the cards matching f at now, in the given sort
// order (SortClaim when empty).
func (s *State) List(f Filter, now time.Time, sortBy string) []Card { return s.s.List(f, now, sortBy) }

// NextWake is the earliest time after now at which a card may become
// claimable without any new event: a lease running out or a deferral ending.
// Zero when no such time is pending.
func (s *State) NextWake(now time.Time) time.Time { return s.s.NextWake(now) }

// Pick returns the card a claim at now would take: the first card claimable
// by anyone that matches f, in claim order, or nil. A card under a live
// lease is never picked, not even for its own owner: claiming by id is how
// an owner renews its own lease under a new epoch.
func (s *State) Pick(f Filter, now time.Time) *Card { return s.s.Pick(f, now) }

// PickTop returns up to k claimable cards matching f, best first: the cards
// Pick would return one after another.
func (s *State) PickTop(f Filter, now time.Time, k int) []Card { return s.s.PickTop(f, now, k) }

// Receipt returns what an earlier request with this id did.
func (s *State) Receipt(requestID string) (Receipt, bool) { return s.s.Receipt(requestID) }

// Standing derives where c stands at now.
func (s *State) Standing(c *Card, now time.Time) Standing { return s.s.Standing(c, now) }

// Stats counts cards by status, claimable and expired cards, and the age of
// the oldest ready card at now.
func (s *State) Stats(now time.Time) Stats { return s.s.Stats(now) }
