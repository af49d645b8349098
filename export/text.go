package export

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bl-backlog/bl/ledger"
)

// Printable is user text as every human-facing rendering shows it (the
// exports here, bl's own human output): what a terminal or a viewer would
// act on rather than show is dropped, so a title cannot retitle a
// terminal, move the cursor, reorder the line around it or hide text:
// control characters other than tab and newline, bidirectional embeddings,
// overrides and isolates, and invalid UTF-8. Other whitespace (CR, vertical
// tab, form feed, NEL, line and paragraph separators) becomes a space.
// Machine formats (--json, the json and jsonl exports) keep text exact; the
// csv export is for people's spreadsheets and shows text as Printable.
func Printable(s string) string {
	if printableASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError && size == 1, bidiControl(r):
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// OneLine is Printable with every run of whitespace, newlines included,
// folded into one space: a title or an owner always fits on one line and
// cannot forge the row after it. A character drawn as nothing
// (ledger.Hidden: a bidi control, a zero-width or other invisible
// character) is shown as <U+XXXX> rather than dropped or kept, so two
// titles or names that differ only by one never look the same.
func OneLine(s string) string {
	if plain(s) && !strings.Contains(s, "  ") && strings.TrimSpace(s) == s {
		return s
	}
	return strings.Join(strings.Fields(Printable(escape(s, false))), " ")
}

// Name is a name (owner, actor, assignee, handoff target, phase, label) as
// human output shows it: every character the name rule refuses
// (ledger.ValidName: a control character, whitespace but the space, a
// bidi control, an invisible character) is shown as <U+XXXX>, and a
// literal "<U+" as "<U+003C>U+", so two names a teammate's older bl wrote
// never look the same. Writers refuse such names, so a name written by bl
// now is shown as it is.
func Name(s string) string {
	if plain(s) && !strings.Contains(s, "<U+") {
		return s
	}
	return escape(s, true)
}

// escape shows each hidden character of s (ledger.Hidden) as <U+XXXX>;
// with name, each one the name rule refuses (ledger.Refused), invalid
// UTF-8 (as <U+FFFD>) and the "<" of a literal "<U+".
func escape(s string, name bool) string {
	var b strings.Builder
	prev := ' '
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		rest := s[i+size:]
		switch {
		case ledger.Hidden(prev, r, rest),
			name && (ledger.Refused(prev, r, rest) || r == utf8.RuneError && size == 1),
			name && r == '<' && strings.HasPrefix(rest, "U+"):
			if b.Len() == 0 {
				b.Grow(len(s) + 8)
				b.WriteString(s[:i])
			}
			fmt.Fprintf(&b, "<%U>", r)
		default:
			if b.Len() > 0 {
				b.WriteString(s[i : i+size])
			}
		}
		prev = r
		i += size
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// printableASCII reports whether s is printable ASCII, tabs and newlines,
// which Printable keeps as it is: the common case, checked without
// allocating.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\n' && c != '\t') || c > '~' {
			return false
		}
	}
	return true
}

// plain reports whether s is printable ASCII without tabs or newlines.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// bidiControl reports whether r changes the direction of the text around
// it (U+061C, U+200E-F, U+202A-E, U+2066-9).
func bidiControl(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true
	}
	return false
}
