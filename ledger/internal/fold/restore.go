package fold

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// This file holds what the store uses to build a state from a snapshot
// and to read a state it holds whole.

// RestoreCard adds a card a snapshot holds, and its idempotency key.
func (s *State) RestoreCard(c *wire.Card) {
	s.cards[c.ID] = c
	if c.IdempotencyKey != "" {
		s.keys[c.IdempotencyKey] = c.ID
	}
}

// CardLine is a card's snapshot line, not decoded yet, the id its card
// must have and the key it must have: what the claim-order walk reads of
// it without decoding it.
type CardLine struct {
	ID   string
	Key  CardKey
	Line []byte // nil once decoded
}

// CardKey is what the claim-order walk (InClaimOrder) reads of a card
// before it hands it on: its status, which the walk keeps to ready,
// claimed and review cards, its lease's end (a walk for a claim passes
// over the cards under a live lease) and its place in claim order (with
// its id).
type CardKey struct {
	Status    wire.Status
	Priority  int
	CreatedAt time.Time
	LeaseEnd  time.Time // zero: no lease end
}

// KeyOf is c's CardKey.
func KeyOf(c *wire.Card) CardKey {
	k := CardKey{Status: c.Status, Priority: c.Priority, CreatedAt: c.CreatedAt}
	if c.LeaseExpiresAt != nil {
		k.LeaseEnd = *c.LeaseExpiresAt
	}
	return k
}

// of reports whether k is c's key.
func (k CardKey) of(c *wire.Card) bool {
	o := KeyOf(c)
	return k.Status == o.Status && k.Priority == o.Priority && k.CreatedAt.Equal(o.CreatedAt) && k.LeaseEnd.Equal(o.LeaseEnd)
}

// leased is Card.Leased of the card k is the key of.
func (k CardKey) leased(now time.Time) bool {
	return k.Status == wire.StatusClaimed && now.Before(k.LeaseEnd)
}

// RestoreCardLines adds cards as the snapshot lines they read from (a
// tail checkpoint's), sorted by id: each is decoded only when first looked
// up, when the claim-order walk hands it on, or when anything ranges over
// the cards in memory (mem). A checkpoint holds a few hundred cards and a
// heartbeat needs one, a claim a few.
func (s *State) RestoreCardLines(lines []CardLine) {
	s.lines, s.undecoded = lines, len(lines)
}

// decodeLine decodes the card id's line, if it has one not decoded yet,
// into the maps. A line that does not decode to that card, or to one with
// another key (only a forged checkpoint has one), stays, and every read
// that needs it fails: the state never answers with the card missing, nor
// in another place in claim order.
// It returns the error of such a line (also noted as the state's fault).
func (s *State) decodeLine(id string) error {
	i, ok := slices.BinarySearchFunc(s.lines, id, func(l CardLine, id string) int { return strings.Compare(l.ID, id) })
	if !ok {
		return nil
	}
	return s.decodeAt(i)
}

func (s *State) decodeAt(i int) error {
	cl := &s.lines[i]
	if cl.Line == nil {
		return nil
	}
	l, err := wire.ReadSnapshotLine(cl.Line)
	if err == nil && (l.Card == nil || l.Card.ID != cl.ID) {
		err = fmt.Errorf("it holds another card")
	} else if err == nil && !cl.Key.of(l.Card) {
		err = fmt.Errorf("its card is not the one its key says")
	}
	if err != nil {
		err = fmt.Errorf("%w: the tail checkpoint's line for card %s does not read (%v); delete .backlog/cache/tail.ckpt", wire.ErrCorrupt, cl.ID, err)
		s.noteFault(err)
		return err
	}
	cl.Line = nil
	s.undecoded--
	s.RestoreCard(l.Card)
	return nil
}

// Undecoded counts the cards whose lines are not decoded yet.
func (s *State) Undecoded() int { return s.undecoded }

// decoded is the card id with its line decoded first, if it has one not
// decoded yet; nil when that line does not read (the fault is noted).
func (s *State) decoded(id string) *wire.Card {
	if s.undecoded > 0 && s.decodeLine(id) != nil {
		return nil
	}
	return s.cards[id]
}

// naming is the cards in memory, with every line not decoded yet that may
// name id (as parent, dependency or link) decoded first: what a read of
// id's referrers ranges over.
func (s *State) naming(id string) map[string]*wire.Card {
	s.decodeQuoting(id)
	return s.cards
}

// decodeKeyed decodes every line not decoded yet whose key passes keep.
func (s *State) decodeKeyed(keep func(k CardKey) bool) {
	for i := range s.lines {
		if l := &s.lines[i]; l.Line != nil && keep(l.Key) {
			s.decodeAt(i) // a line that does not read notes the fault
		}
	}
}

// decodeQuoting decodes every line not decoded yet that may hold str as a
// JSON string (a card id it names, its idempotency key). The encoder
// writes a string of printable ASCII without a quote or backslash as it
// is, so a line without that string in quotes holds no such string; for
// any other string, every line is decoded.
func (s *State) decodeQuoting(str string) {
	if s.undecoded == 0 {
		return
	}
	if !plainJSON(str) {
		s.mem()
		return
	}
	q := []byte(`"` + str + `"`)
	for i := range s.lines {
		if l := s.lines[i].Line; l != nil && bytes.Contains(l, q) {
			s.decodeAt(i) // a line that does not read notes the fault
		}
	}
}

// plainJSON reports whether the encoder writes str, in a JSON string, as
// it is: printable ASCII without a quote or backslash.
func plainJSON(str string) bool {
	for i := 0; i < len(str); i++ {
		if c := str[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// holds reports whether s holds card id in memory, its line decoded or
// not: a card a read from the source must leave as it is.
func (s *State) holds(id []byte) bool {
	if _, ok := s.cards[string(id)]; ok {
		return true
	}
	if s.undecoded == 0 {
		return false
	}
	i := sort.Search(len(s.lines), func(i int) bool { return s.lines[i].ID >= string(id) })
	return i < len(s.lines) && s.lines[i].ID == string(id)
}

// mem is the cards in memory, every line not decoded yet decoded first:
// what a rule or read that ranges over them, or tells them from the
// source's, uses.
func (s *State) mem() map[string]*wire.Card {
	if s.undecoded == 0 {
		return s.cards // the common case, asked in tight loops
	}
	for i := range s.lines {
		s.decodeAt(i)
	}
	if s.undecoded == 0 {
		s.lines = nil
	}
	return s.cards
}

// RestoreReceipt adds what a request id did, as a snapshot remembers it.
func (s *State) RestoreReceipt(requestID string, r wire.Receipt) { s.requests[requestID] = r }

// RestoreConflict adds a conflict a snapshot records, in fold order.
func (s *State) RestoreConflict(c wire.Conflict) { s.recordConflictEntry(c) }

// RestorePosition sets how many events the snapshot folded and the last
// of them (its stamp and id).
func (s *State) RestorePosition(events int64, last wire.Event) { s.events, s.last = events, last }

// InMemory counts the cards, receipts and conflicts s holds in memory:
// all of them, for a state read whole.
func (s *State) InMemory() (cards, receipts, conflicts int) {
	return len(s.mem()), len(s.requests), len(s.conflicts)
}

// SetSource makes s read what its maps lack from src, a snapshot read
// lazily; Release closes it.
func (s *State) SetSource(src CardSource) { s.src = src }

// Source is what s reads from: nil when it holds everything in memory.
func (s *State) Source() CardSource { return s.src }

// SetClaimEpics says whether open children hold an epic back from being
// claimed (epics.wait_for_children): a rule of selection, never of the
// fold.
func (s *State) SetClaimEpics(on bool) { s.claimEpics = on }

// NumConflicts is the number of events the fold refused.
func (s *State) NumConflicts() int { return len(s.conflicts) }

// Range calls fn with each card s holds in memory (every card, for a state
// read whole) in no order, until fn returns false. The cards are the
// state's own: fn must not change them.
func (s *State) Range(fn func(c *wire.Card) bool) {
	for _, c := range s.mem() {
		if !fn(c) {
			return
		}
	}
}

// RangeHeld calls card with each card s holds decoded, in no order, and
// line with each card line not decoded yet, in id order, decoding none:
// what a tail checkpoint of s holds. A line not decoded is the card as the checkpoint
// it came from holds it: reading or changing a card decodes its line
// first.
func (s *State) RangeHeld(card func(c *wire.Card), line func(l CardLine)) {
	for _, c := range s.cards {
		card(c)
	}
	for _, l := range s.lines {
		if l.Line != nil {
			line(l)
		}
	}
}

// RangeReceipts calls fn with each receipt s holds in memory, in no order,
// until fn returns false.
func (s *State) RangeReceipts(fn func(requestID string, r wire.Receipt) bool) {
	for rid, r := range s.requests {
		if !fn(rid, r) {
			return
		}
	}
}

// Created is the number of cards created since the source's snapshot.
func (s *State) Created() int { return s.created }

// RestoreCreated sets how many cards were created since the source's
// snapshot: the tail checkpoint's count, restored over that snapshot.
func (s *State) RestoreCreated(n int) { s.created = n }
