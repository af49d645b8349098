package fold

import (
	"bytes"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// MinIDPrefix is the shortest prefix of a card id that CardsNamed completes:
// a shorter word names no card but its own, so "A" never turns into A1.
const MinIDPrefix = 4

// GeneratedIDPrefix starts every generated card id (bl-k3x9q2mf); a
// prefix may leave it out (k3x9).
const GeneratedIDPrefix = "bl-"

// CardsNamed returns the ids of the cards a word a person typed names, sorted:
// the card whose id it is; else the cards an importer recorded with it as
// their source's key (an idempotency key "tracker:WORD", as beads:bd-44d0)
// together with, for a word of at least MinIDPrefix characters, the cards
// whose id starts with it (or with GeneratedIDPrefix and it). Live cards
// are preferred to deleted ones. A state read lazily asks its snapshot
// for the cards that may match (the index finds ids by prefix without
// reading the others) and reads those; the cards it holds in memory are
// all the others that can.
func (s *State) CardsNamed(word string) []string {
	if word == "" {
		return nil
	}
	if wire.ValidID(word) == nil && s.Find(word) != nil {
		return []string{word}
	}
	long := len(strings.TrimPrefix(word, GeneratedIDPrefix)) >= MinIDPrefix
	if s.src != nil {
		var prefixes []string
		if long {
			prefixes = []string{word, GeneratedIDPrefix + word}
		}
		ids, err := s.src.Named(prefixes, ":"+word)
		if err != nil {
			s.noteFault(err)
			return nil
		}
		for _, id := range ids {
			s.Find(id)
		}
	}
	// Of a checkpoint's lines not decoded yet, those whose id has the
	// prefix or that hold ":word" ending a string may be named.
	if s.undecoded > 0 && !plainJSON(word) {
		s.mem()
	} else if s.undecoded > 0 {
		keyEnd := []byte(":" + word + `"`)
		for i := range s.lines {
			l := &s.lines[i]
			if l.Line != nil && (long && (strings.HasPrefix(l.ID, word) || strings.HasPrefix(l.ID, GeneratedIDPrefix+word)) || bytes.Contains(l.Line, keyEnd)) {
				s.decodeAt(i) // a line that does not read notes the fault
			}
		}
	}
	var keyed, prefixed [2][]string // [live, deleted]
	for id, c := range s.cards {
		gone := 0
		if c.DeletedAt != nil {
			gone = 1
		}
		if k := c.IdempotencyKey; len(k) > len(word) && strings.HasSuffix(k, word) && k[len(k)-len(word)-1] == ':' && !strings.Contains(k[:len(k)-len(word)-1], ":") {
			keyed[gone] = append(keyed[gone], id)
		}
		if long && (strings.HasPrefix(id, word) || strings.HasPrefix(id, GeneratedIDPrefix+word)) {
			prefixed[gone] = append(prefixed[gone], id)
		}
	}
	// A source key and a prefix are both guesses at what was meant: a word
	// that is one card's key and another's prefix names both (ambiguous),
	// so a card made with a crafted key cannot take over a word people
	// type for another. Live cards first, then deleted ones (bl restore).
	for gone := range 2 {
		ids := append(keyed[gone], prefixed[gone]...)
		if len(ids) > 0 {
			slices.Sort(ids)
			return slices.Compact(ids)
		}
	}
	return nil
}
