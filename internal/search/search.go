// Package search finds cards by text: the words of a query, matched
// case-insensitively in a card's id, title, labels, acceptance criteria,
// body and notes, ranked so that id and title matches come first. bl
// search, bl list --search and the MCP server share it.
package search

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bl-backlog/bl/ledger"
)

// Result is one card that matched, with its score (higher ranks first)
// and the fields the words were found in, in Fields order.
type Result struct {
	Card   *ledger.Card
	Score  int
	Fields []string
}

// Fields, in rank order, with the score one word earns in each. A word
// that is a card's whole id outranks everything.
const (
	FieldID         = "id"
	FieldTitle      = "title"
	FieldLabels     = "labels"
	FieldAcceptance = "acceptance"
	FieldBody       = "body"
	FieldNotes      = "notes"
)

const (
	scoreIDExact = 10000
	scoreID      = 1000
	scoreTitle   = 100
	scoreLabel   = 30
	scoreAccept  = 10
	scoreBody    = 5
	scoreNote    = 2
)

// Words splits a query into the lower-cased words it matches by.
func Words(query string) []string {
	ws := strings.Fields(query)
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return ws
}

// Cards returns the cards that hold every word of query somewhere, best
// first; cards that score the same keep their order in cards. An empty
// query matches nothing.
func Cards(cards []ledger.Card, query string) []Result {
	words := Words(query)
	if len(words) == 0 {
		return nil
	}
	var out []Result
	m := newMatcher(words)
	for i := range cards {
		if r, ok := m.match(&cards[i], words); ok {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Result) int { return cmp.Compare(b.Score, a.Score) })
	return out
}

// Keep returns the cards of cards that hold every word of query, in
// their order, reusing cards' array. An empty query keeps them all.
func Keep(cards []ledger.Card, query string) []ledger.Card {
	words := Words(query)
	if len(words) == 0 {
		return cards
	}
	m := newMatcher(words)
	out := cards[:0]
	for i := range cards {
		if _, ok := m.match(&cards[i], words); ok {
			out = append(out, cards[i])
		}
	}
	return out
}

func newMatcher(words []string) *matcher {
	n := len(words)
	m := &matcher{scores: make([]int, n), hit: make([]bool, n), noteHit: make([]bool, n), wordsB: make([][]byte, n)}
	for i, w := range words {
		m.wordsB[i] = []byte(w)
	}
	return m
}

// matcher holds the scratch buffers of a search, so that matching many
// cards allocates only for the results.
type matcher struct {
	buf     []byte
	wordsB  [][]byte // the words, as bytes
	scores  []int    // per word
	hit     []bool   // per word, in the field being matched
	noteHit []bool   // per word, in any note
	seen    [6]bool
}

func (m *matcher) match(c *ledger.Card, words []string) (Result, bool) {
	clear(m.scores)
	clear(m.noteHit)
	m.seen = [6]bool{}
	for i, w := range words {
		if strings.EqualFold(c.ID, w) {
			m.scores[i] += scoreIDExact - scoreID // plus the contains below
		}
	}
	m.field(0, scoreID, words, c.ID)
	m.field(1, scoreTitle, words, c.Title)
	m.field(2, scoreLabel, words, c.Labels...)
	m.field(3, scoreAccept, words, c.Acceptance...)
	m.field(4, scoreBody, words, c.Body)
	for _, n := range c.Notes {
		m.field(5, scoreNote, words, n.Text)
	}
	// Notes count once per word, however many hold it.
	for i := range words {
		if m.noteHit[i] {
			m.scores[i] += scoreNote
		}
	}
	r := Result{Card: c}
	for _, s := range m.scores {
		if s == 0 {
			return Result{}, false
		}
		r.Score += s
	}
	for i, f := range [...]string{FieldID, FieldTitle, FieldLabels, FieldAcceptance, FieldBody, FieldNotes} {
		if m.seen[i] {
			r.Fields = append(r.Fields, f)
		}
	}
	return r, true
}

// field adds score to each word found in any of texts, the field
// numbered f, once per word. Notes (f 5) are only marked, in noteHit.
func (m *matcher) field(f, score int, words []string, texts ...string) {
	clear(m.hit)
	for _, text := range texts {
		if text == "" {
			continue
		}
		m.buf = appendLower(m.buf[:0], text)
		for i := range words {
			if !m.hit[i] && bytes.Contains(m.buf, m.wordsB[i]) {
				m.hit[i] = true
				m.seen[f] = true
				if f == 5 {
					m.noteHit[i] = true
				} else {
					m.scores[i] += score
				}
			}
		}
	}
}

// appendLower appends s in lower case: ASCII in place, anything else
// through strings.ToLower.
func appendLower(dst []byte, s string) []byte {
	n := len(dst)
	dst = slices.Grow(dst, len(s))[:n+len(s)]
	out := dst[n:]
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= utf8.RuneSelf {
			return append(dst[:n], strings.ToLower(s)...)
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		out[i] = b
	}
	return dst
}
