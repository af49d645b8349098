package export

import (
	"slices"

	"github.com/bl-backlog/bl/ledger"
)

// AppendCardJSON appends c as the JSON encoder writes it with HTML escaping
// off: compact, as json.MarshalWithOption writes it, or with indent as
// json.MarshalIndentWithOption with no prefix and an indent of two spaces
// writes it. A nil c is null. ok is false for a card it leaves to the JSON
// encoder (a time outside what RFC 3339 holds, a checkpoint that is not
// plain valid JSON); dst is then as it was. The compact form is the
// ledger's (ledger.AppendCard); the indented one is that, indented.
func AppendCardJSON(dst []byte, c *ledger.Card, indent bool) (out []byte, ok bool) {
	if !indent || c == nil {
		return ledger.AppendCard(dst, c)
	}
	return AppendCardJSONAt(dst, c, 0)
}

// AppendCardJSONAt appends c indented as AppendCardJSON does, with its
// members at level+1: the form of an element of an indented list at level.
func AppendCardJSONAt(dst []byte, c *ledger.Card, level int) (out []byte, ok bool) {
	out, _, ok = AppendCardJSONScratch(dst, nil, c, level)
	return out, ok
}

// AppendCardJSONScratch is AppendCardJSONAt building the card's compact
// form in scratch, which it returns grown for the next call: a list of
// cards is written without an allocation per card (a 2 KB buffer each
// was 200 MB for bl list --json of 100k cards).
func AppendCardJSONScratch(dst, scratch []byte, c *ledger.Card, level int) (out, scratchOut []byte, ok bool) {
	compact, ok := ledger.AppendCard(scratch[:0], c)
	if !ok {
		return dst, scratch, false
	}
	return appendIndented(slices.Grow(dst, indentedSize(compact, level)), compact, level), compact, true
}

// indentedSize estimates the length of the indented form of compact at
// level.
func indentedSize(compact []byte, level int) int {
	return len(compact) + len(compact)/8*(2*level+6) + 64
}

// AppendCardsJSON appends a list of cards as the JSON encoder writes a
// []Card, as AppendCardJSON does one card: null for a nil slice, [] for an
// empty one.
func AppendCardsJSON(dst []byte, cards []ledger.Card, indent bool) (out []byte, ok bool) {
	switch {
	case cards == nil:
		return append(dst, "null"...), true
	case len(cards) == 0:
		return append(dst, '[', ']'), true
	}
	n := len(dst)
	var buf [2048]byte
	compact := buf[:0]
	dst = append(dst, '[')
	for k := range cards {
		if k > 0 {
			dst = append(dst, ',')
		}
		if compact, ok = ledger.AppendCard(compact[:0], &cards[k]); !ok {
			return dst[:n], false
		}
		if k == 0 {
			// The first card's size, for all of them.
			size := len(compact)
			if indent {
				size = indentedSize(compact, 1)
			}
			dst = slices.Grow(dst, (size+4)*len(cards)*9/8)
		}
		if !indent {
			dst = append(dst, compact...)
			continue
		}
		dst = appendIndented(append(dst, "\n  "...), compact, 1)
	}
	if indent {
		dst = append(dst, '\n')
	}
	return append(dst, ']'), true
}

// structural marks the bytes appendIndented acts on; it copies runs of
// the others as they are.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true, ',': true, ':': true}

// appendIndented appends src, compact JSON as the ledger's encoder writes
// it (valid, no white space), in the indented form the JSON encoder writes:
// each member and element on a line of its own, two spaces a level deeper
// than its container, which starts at level; a space after each colon;
// empty objects and lists as {} and [].
func appendIndented(dst, src []byte, level int) []byte {
	for i := 0; i < len(src); {
		j := i
		for j < len(src) && !structural[src[j]] {
			j++
		}
		dst = append(dst, src[i:j]...)
		if j == len(src) {
			break
		}
		switch c := src[j]; c {
		case '"':
			i = stringEnd(src, j)
			dst = append(dst, src[j:i]...)
			continue
		case '{', '[':
			if j+1 < len(src) && (src[j+1] == '}' || src[j+1] == ']') {
				dst = append(dst, c, src[j+1])
				i = j + 2
				continue
			}
			level++
			dst = newline(append(dst, c), level)
		case '}', ']':
			level--
			dst = append(newline(dst, level), c)
		case ',':
			dst = newline(append(dst, ','), level)
		case ':':
			dst = append(dst, ':', ' ')
		}
		i = j + 1
	}
	return dst
}

// stringEnd returns the index after the string that starts at src[i].
func stringEnd(src []byte, i int) int {
	for i++; i < len(src); i++ {
		switch src[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte
		}
	}
	return len(src)
}

// newline starts a line of the indented form at level: two spaces a level.
func newline(dst []byte, level int) []byte {
	const lines = "\n                                " // up to level 16
	if 1+2*level <= len(lines) {
		return append(dst, lines[:1+2*level]...)
	}
	dst = append(dst, lines...)
	for range level - (len(lines)-1)/2 {
		dst = append(dst, ' ', ' ')
	}
	return dst
}
