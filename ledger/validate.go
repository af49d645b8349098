package ledger

import "unicode/utf8"

// Limits on input, enforced at write time and again by the fold.
const (
	MaxIDLen       = 64
	MaxTitleLen    = 500
	MaxBodyLen     = 64 << 10
	MaxPriority    = 1_000_000
	MaxCheckpoint  = 16 << 10
	MaxListEntries = 256
	// A note's text and a fail's reason are at most MaxNoteLen bytes, its
	// author at most MaxAuthorLen, and a card keeps its last MaxNotes
	// notes: notes add at most about 140 KiB to a card line.
	MaxNoteLen   = 4 << 10
	MaxNotes     = 32
	MaxAuthorLen = 256
)

// idChar reports whether c may appear in a card id; the first character
// must also be a letter or digit.
func idChar(c byte, first bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return !first && (c == '.' || c == '_' || c == '-')
}

func validIDChars(id string) bool {
	for i := 0; i < len(id); i++ {
		if !idChar(id[i], i == 0) {
			return false
		}
	}
	return true
}

// ValidID reports why id cannot name a card, or nil.
func ValidID(id string) error {
	switch {
	case id == "":
		return rule(ErrInvalid, "card id is empty")
	case len(id) > MaxIDLen:
		return rule(ErrInvalid, "card id %q is longer than %d characters", id, MaxIDLen)
	case !validIDChars(id):
		return rule(ErrInvalid, "card id %q may use only letters, digits, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

// validUTF8 refuses an event carrying text that is not valid UTF-8. JSON
// stores each invalid byte as U+FFFD, so writing it would quietly record
// something other than what was asked for. The writer runs it on the event
// as built, before encoding; the fold needs no such rule, since decoding
// never yields invalid UTF-8.
func validUTF8(e *Event) error {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	var f Fields
	if e.Fields != nil {
		f = *e.Fields
	}
	for _, t := range [...]struct{ name, s string }{
		{"actor", e.Actor}, {"card id", e.Card}, {"request id", e.RequestID}, {"owner", e.Owner},
		{"reason", e.Reason}, {"link target", e.To}, {"checkpoint", string(e.Checkpoint)},
		{"title", deref(f.Title)}, {"body", deref(f.Body)}, {"phase", deref(f.Phase)},
		{"parent", deref(f.Parent)}, {"idempotency key", f.IdempotencyKey},
	} {
		if !utf8.ValidString(t.s) {
			return invalidUTF8(e, t.name, t.s)
		}
	}
	for _, l := range [...]struct {
		name string
		list *[]string
	}{{"label", f.Labels}, {"acceptance criterion", f.Acceptance}, {"dependency", f.DependsOn}} {
		if l.list != nil {
			for _, s := range *l.list {
				if !utf8.ValidString(s) {
					return invalidUTF8(e, l.name, s)
				}
			}
		}
	}
	return nil
}

// invalidUTF8 says where s, the named text of e, stops being UTF-8.
func invalidUTF8(e *Event, name, s string) error {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	return rule(ErrInvalid, "the %s of this %s is not valid UTF-8 (byte 0x%02x at offset %d); bl stores text as UTF-8", name, e.Op, s[i], i)
}
