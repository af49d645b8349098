package ledger

import (
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The encoders below write events and cards without the JSON encoder, byte
// for byte as json.MarshalWithOption(v, json.DisableHTMLEscape()) writes
// them (and, for cards, json.MarshalIndentWithOption(v, "", "  ", ...)): the
// members in struct order, omitempty as the encoder applies it, strings
// escaped as it escapes them, times by their MarshalJSON, checkpoints
// compacted or indented. A bl process is short-lived, and the JSON encoder
// compiles an encoder for each type the first time the process encodes one,
// which costs more than the encoding itself.
//
// What they do not handle they report (ok false) rather than guess at: a
// time MarshalJSON refuses (a year outside [0,9999], an offset of a day or
// more) and a checkpoint that is not valid JSON of valid UTF-8 without lone
// surrogate escapes, at most 64 levels deep. The caller then uses the JSON
// encoder, which writes the same bytes for every value these take.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as the JSON encoder
// escapes it with HTML escaping off: '"' and '\\' with a backslash, \b, \f,
// \n, \r and \t as such, other control characters as \u00XX, U+2028 and
// U+2029 as \u2028 and \u2029, and each byte of invalid UTF-8 as \ufffd.
// Everything else, DEL included, is written as it is.
func appendString(dst []byte, s string) []byte {
	i := 0
	for i+8 <= len(s) && specialMask(load64(s, i)) == 0 {
		i += 8
	}
	for i < len(s) && strByte[s[i]] == 0 {
		i++
	}
	dst = append(dst, '"')
	if i < len(s) {
		return appendEscaped(dst, s, i)
	}
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendEscaped is appendString for a string whose first byte not written
// as it is, s[i], may need an escape. The opening quote is in dst.
func appendEscaped(dst []byte, s string, i int) []byte {
	start := 0
	for i < len(s) {
		if i+8 <= len(s) {
			m := specialMask(load64(s, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else if strByte[s[i]] == 0 {
			i++
			continue
		}
		// s[i] is a quote, a backslash, a control character or the start
		// of a multi-byte sequence.
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load64 reads s[i:i+8] as a little-endian word.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// appendTime appends t as its MarshalJSON writes it: quoted RFC 3339 with
// up to nine fractional digits. ok is false for a time MarshalJSON refuses.
func appendTime(dst []byte, t time.Time) (out []byte, ok bool) {
	n := len(dst)
	out, err := t.AppendText(append(dst, '"'))
	if err != nil {
		return dst[:n], false
	}
	return append(out, '"'), true
}

// appendInt appends n in decimal.
func appendInt(dst []byte, n int64) []byte {
	if 0 <= n && n < 10 {
		return append(dst, byte('0'+n))
	}
	return strconv.AppendInt(dst, n, 10)
}

// appendStrings appends a list of strings: null for a nil slice, [] for an
// empty one, and in the indented form each element on a line of its own at
// level+1.
func appendStrings(dst []byte, list []string, indent bool, level int) []byte {
	switch {
	case list == nil:
		return append(dst, "null"...)
	case len(list) == 0:
		return append(dst, '[', ']')
	}
	dst = append(dst, '[')
	for k, s := range list {
		if k > 0 {
			dst = append(dst, ',')
		}
		if indent {
			dst = newline(dst, level+1)
		}
		dst = appendString(dst, s)
	}
	if indent {
		dst = newline(dst, level)
	}
	return append(dst, ']')
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

// maxRawDepth is the deepest nesting of a checkpoint the encoders write
// themselves.
const maxRawDepth = 64

// appendRaw appends src, a JSON document, as the JSON encoder writes a
// json.RawMessage: compacted, or in the indented form with its elements at
// level+1 and its closing bracket at level; strings and numbers as they are
// written. ok is false for anything but one valid value, surrounded by
// white space at most, of valid UTF-8 with no lone surrogate escape, at most
// maxRawDepth levels deep.
func appendRaw(dst, src []byte, indent bool, level int) (out []byte, ok bool) {
	n := len(dst)
	out, i := appendRawValue(dst, src, skipSpace(src, 0), indent, level, 0)
	if i < 0 || skipSpace(src, i) != len(src) {
		return dst[:n], false
	}
	return out, true
}

// skipSpace returns the index of the first byte at or after src[i] that is
// not JSON white space.
func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\n' || src[i] == '\r' || src[i] == '\t') {
		i++
	}
	return i
}

// appendRawValue appends the value at src[i:] and returns the index after
// it, or -1.
func appendRawValue(dst, src []byte, i int, indent bool, level, depth int) ([]byte, int) {
	if i >= len(src) {
		return dst, -1
	}
	switch c := src[i]; {
	case c == '{' || c == '[':
		if depth >= maxRawDepth {
			return dst, -1
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		dst = append(dst, c)
		if i = skipSpace(src, i+1); i < len(src) && src[i] == end {
			return append(dst, end), i + 1
		}
		for {
			if indent {
				dst = newline(dst, level+1)
			}
			if c == '{' {
				j := skipRawString(src, i)
				if j < 0 {
					return dst, -1
				}
				dst = append(dst, src[i:j]...)
				if i = skipSpace(src, j); i >= len(src) || src[i] != ':' {
					return dst, -1
				}
				dst = append(dst, ':')
				if indent {
					dst = append(dst, ' ')
				}
				i = skipSpace(src, i+1)
			}
			if dst, i = appendRawValue(dst, src, i, indent, level+1, depth+1); i < 0 {
				return dst, -1
			}
			if i = skipSpace(src, i); i >= len(src) {
				return dst, -1
			}
			switch src[i] {
			case ',':
				dst = append(dst, ',')
				i = skipSpace(src, i+1)
			case end:
				if indent {
					dst = newline(dst, level)
				}
				return append(dst, end), i + 1
			default:
				return dst, -1
			}
		}
	case c == '"':
		j := skipRawString(src, i)
		if j < 0 {
			return dst, -1
		}
		return append(dst, src[i:j]...), j
	case c == 't':
		return appendLiteral(dst, src, i, "true")
	case c == 'f':
		return appendLiteral(dst, src, i, "false")
	case c == 'n':
		return appendLiteral(dst, src, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		j := skipNumber(src, i)
		if j < 0 {
			return dst, -1
		}
		return append(dst, src[i:j]...), j
	}
	return dst, -1
}

func appendLiteral(dst, src []byte, i int, lit string) ([]byte, int) {
	if len(src)-i >= len(lit) && string(src[i:i+len(lit)]) == lit {
		return append(dst, lit...), i + len(lit)
	}
	return dst, -1
}

// skipRawString skips the string at src[i:], which must have valid escapes,
// valid UTF-8 and no lone surrogate escape, and returns the index after it,
// or -1.
func skipRawString(src []byte, i int) int {
	if i >= len(src) || src[i] != '"' {
		return -1
	}
	for i++; ; {
		if i = nextSpecial(src, i); i >= len(src) {
			return -1
		}
		switch strByte[src[i]] {
		case 1:
			if src[i] == '"' {
				return i + 1
			}
			if i+1 >= len(src) {
				return -1
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(src, i+2)
				if !ok {
					return -1
				}
				i += 6
				if 0xd800 <= r && r <= 0xdfff {
					// Only a high surrogate followed by an escaped low one.
					if r >= 0xdc00 || i+1 >= len(src) || src[i] != '\\' || src[i+1] != 'u' {
						return -1
					}
					if lo, ok := hex4(src, i+2); !ok || lo < 0xdc00 || lo > 0xdfff {
						return -1
					}
					i += 6
				}
			default:
				return -1
			}
		case 3:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			i += size
		default:
			return -1 // a control character
		}
	}
}

// appendEvent appends e as the JSON encoder writes it, compact. ok is false
// for an event it leaves to the JSON encoder; dst is then as it was.
func appendEvent(dst []byte, e *Event) (out []byte, ok bool) {
	n := len(dst)
	dst = append(dst, `{"v":`...)
	dst = appendInt(dst, int64(e.V))
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, e.ID)
	dst = append(dst, `,"at":`...)
	if dst, ok = appendTime(dst, e.At); !ok {
		return dst[:n], false
	}
	if e.Clock != nil {
		dst = append(dst, `,"clock":`...)
		if dst, ok = appendTime(dst, *e.Clock); !ok {
			return dst[:n], false
		}
	}
	dst = append(dst, `,"actor":`...)
	dst = appendString(dst, e.Actor)
	dst = append(dst, `,"op":`...)
	dst = appendString(dst, string(e.Op))
	dst = append(dst, `,"card":`...)
	dst = appendString(dst, e.Card)
	if e.RequestID != "" {
		dst = append(dst, `,"request_id":`...)
		dst = appendString(dst, e.RequestID)
	}
	if e.ExpectVersion != 0 {
		dst = append(dst, `,"expect_version":`...)
		dst = appendInt(dst, e.ExpectVersion)
	}
	if e.Epoch != 0 {
		dst = append(dst, `,"epoch":`...)
		dst = appendInt(dst, e.Epoch)
	}
	if e.Owner != "" {
		dst = append(dst, `,"owner":`...)
		dst = appendString(dst, e.Owner)
	}
	if e.TTLSeconds != 0 {
		dst = append(dst, `,"ttl_seconds":`...)
		dst = appendInt(dst, e.TTLSeconds)
	}
	if e.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, e.Reason)
	}
	if e.To != "" {
		dst = append(dst, `,"to":`...)
		dst = appendString(dst, e.To)
	}
	if e.Progress != nil {
		dst = append(dst, `,"progress":`...)
		dst = appendInt(dst, int64(*e.Progress))
	}
	if len(e.Checkpoint) != 0 {
		dst = append(dst, `,"checkpoint":`...)
		if dst, ok = appendRaw(dst, e.Checkpoint, false, 0); !ok {
			return dst[:n], false
		}
	}
	if e.Force {
		dst = append(dst, `,"force":true`...)
	}
	if e.Fields != nil {
		dst = append(dst, `,"fields":`...)
		if dst, ok = appendFields(dst, e.Fields); !ok {
			return dst[:n], false
		}
	}
	if e.Text != "" {
		dst = append(dst, `,"text":`...)
		dst = appendString(dst, e.Text)
	}
	if e.BackoffSeconds != 0 {
		dst = append(dst, `,"backoff_seconds":`...)
		dst = appendInt(dst, e.BackoffSeconds)
	}
	if e.BackoffMaxSeconds != 0 {
		dst = append(dst, `,"backoff_max_seconds":`...)
		dst = appendInt(dst, e.BackoffMaxSeconds)
	}
	return append(dst, '}'), true
}

// appendFields appends f, compact. Each member is written after a comma,
// and the first comma becomes the opening brace.
func appendFields(dst []byte, f *Fields) (out []byte, ok bool) {
	open := len(dst)
	if f.Title != nil {
		dst = append(dst, `,"title":`...)
		dst = appendString(dst, *f.Title)
	}
	if f.Body != nil {
		dst = append(dst, `,"body":`...)
		dst = appendString(dst, *f.Body)
	}
	if f.Phase != nil {
		dst = append(dst, `,"phase":`...)
		dst = appendString(dst, *f.Phase)
	}
	if f.Priority != nil {
		dst = append(dst, `,"priority":`...)
		dst = appendInt(dst, int64(*f.Priority))
	}
	if f.Labels != nil {
		dst = append(dst, `,"labels":`...)
		dst = appendStrings(dst, *f.Labels, false, 0)
	}
	if f.DependsOn != nil {
		dst = append(dst, `,"depends_on":`...)
		dst = appendStrings(dst, *f.DependsOn, false, 0)
	}
	if f.Parent != nil {
		dst = append(dst, `,"parent":`...)
		dst = appendString(dst, *f.Parent)
	}
	if f.Acceptance != nil {
		dst = append(dst, `,"acceptance":`...)
		dst = appendStrings(dst, *f.Acceptance, false, 0)
	}
	if f.MaxAttempts != nil {
		dst = append(dst, `,"max_attempts":`...)
		dst = appendInt(dst, int64(*f.MaxAttempts))
	}
	if f.DeferUntil != nil {
		dst = append(dst, `,"defer_until":`...)
		if dst, ok = appendTime(dst, *f.DeferUntil); !ok {
			return dst, false
		}
	}
	if f.IdempotencyKey != "" {
		dst = append(dst, `,"idempotency_key":`...)
		dst = appendString(dst, f.IdempotencyKey)
	}
	if len(dst) == open {
		return append(dst, '{', '}'), true
	}
	dst[open] = '{'
	return append(dst, '}'), true
}

// eventSize estimates the length of e's line, for the buffer it is written
// into: the members' names and the usual numbers and times, and the
// strings.
func eventSize(e *Event) int {
	n := 192 + len(e.ID) + len(e.Actor) + len(e.Card) + len(e.RequestID) + len(e.Owner) + len(e.Reason) + len(e.To) + len(e.Checkpoint)
	if e.Clock != nil {
		n += len(`,"clock":"2006-01-02T15:04:05.999999999Z"`)
	}
	if e.Text != "" || e.BackoffSeconds != 0 || e.BackoffMaxSeconds != 0 {
		n += 96 + len(e.Text)
	}
	if f := e.Fields; f != nil {
		n += 192 + len(f.IdempotencyKey)
		for _, s := range [...]*string{f.Title, f.Body, f.Phase, f.Parent} {
			if s != nil {
				n += len(*s)
			}
		}
		for _, l := range [...]*[]string{f.Labels, f.DependsOn, f.Acceptance} {
			if l != nil {
				n += stringsSize(*l, false)
			}
		}
	}
	return n
}

// stringsSize estimates the length of a list of strings.
func stringsSize(list []string, indent bool) int {
	per := 3
	if indent {
		per = 12
	}
	n := 8
	for _, s := range list {
		n += len(s) + per
	}
	return n
}

// cardSize estimates the length of c's JSON.
func cardSize(c *Card, indent bool) int {
	n := 640 + len(c.ID) + len(c.Title) + len(c.Body) + len(c.Phase) + len(c.Status) + len(c.Parent) + len(c.IdempotencyKey) +
		len(c.ClaimOwner) + len(c.BlockedReason) + len(c.CloseNote) +
		stringsSize(c.Labels, indent) + stringsSize(c.DependsOn, indent) + stringsSize(c.Acceptance, indent)
	for k := range c.Notes {
		n += 96 + len(c.Notes[k].Text) + len(c.Notes[k].Author)
		if indent {
			n += 64
		}
	}
	if indent {
		return n + 160 + 4*len(c.Checkpoint)
	}
	return n + len(c.Checkpoint)
}

// AppendCardJSON appends c as the JSON encoder writes it with HTML escaping
// off: compact, as json.MarshalWithOption writes it, or with indent as
// json.MarshalIndentWithOption with no prefix and an indent of two spaces
// writes it. A nil c is null. ok is false for a card it leaves to the JSON
// encoder (a time outside what RFC 3339 holds, a checkpoint that is not
// plain valid JSON); dst is then as it was.
func AppendCardJSON(dst []byte, c *Card, indent bool) (out []byte, ok bool) {
	if c == nil {
		return append(dst, "null"...), true
	}
	return appendCard(slices.Grow(dst, cardSize(c, indent)), c, indent, 0)
}

// AppendCardJSONAt appends c indented as AppendCardJSON does, with its
// members at level+1: the form of an element of an indented list at level.
func AppendCardJSONAt(dst []byte, c *Card, level int) (out []byte, ok bool) {
	return appendCard(slices.Grow(dst, cardSize(c, true)), c, true, level)
}

// AppendCardsJSON appends a list of cards as the JSON encoder writes a
// []Card, as AppendCardJSON does one card: null for a nil slice, [] for an
// empty one.
func AppendCardsJSON(dst []byte, cards []Card, indent bool) (out []byte, ok bool) {
	switch {
	case cards == nil:
		return append(dst, "null"...), true
	case len(cards) == 0:
		return append(dst, '[', ']'), true
	}
	size := 0
	for k := range cards {
		size += cardSize(&cards[k], indent) + 8
	}
	n := len(dst)
	dst = append(slices.Grow(dst, size), '[')
	for k := range cards {
		if k > 0 {
			dst = append(dst, ',')
		}
		if indent {
			dst = newline(dst, 1)
		}
		if dst, ok = appendCard(dst, &cards[k], indent, 1); !ok {
			return dst[:n], false
		}
	}
	if indent {
		dst = newline(dst, 0)
	}
	return append(dst, ']'), true
}

// appendCard appends c, its members at level+1 in the indented form.
func appendCard(dst []byte, c *Card, indent bool, level int) (out []byte, ok bool) {
	n := len(dst)
	w := cardWriter{b: append(dst, '{'), indent: indent, level: level + 1, ok: true}
	w.key(`"id":`, true)
	w.str(c.ID)
	w.key(`,"title":`, false)
	w.str(c.Title)
	if c.Body != "" {
		w.key(`,"body":`, false)
		w.str(c.Body)
	}
	if c.Phase != "" {
		w.key(`,"phase":`, false)
		w.str(c.Phase)
	}
	w.key(`,"labels":`, false)
	w.b = appendStrings(w.b, c.Labels, indent, w.level)
	w.key(`,"priority":`, false)
	w.b = appendInt(w.b, int64(c.Priority))
	w.key(`,"status":`, false)
	w.str(string(c.Status))
	w.key(`,"depends_on":`, false)
	w.b = appendStrings(w.b, c.DependsOn, indent, w.level)
	if c.Parent != "" {
		w.key(`,"parent":`, false)
		w.str(c.Parent)
	}
	w.key(`,"acceptance":`, false)
	w.b = appendStrings(w.b, c.Acceptance, indent, w.level)
	if c.IdempotencyKey != "" {
		w.key(`,"idempotency_key":`, false)
		w.str(c.IdempotencyKey)
	}
	if c.ClaimOwner != "" {
		w.key(`,"claim_owner":`, false)
		w.str(c.ClaimOwner)
	}
	w.key(`,"claim_epoch":`, false)
	w.b = appendInt(w.b, c.ClaimEpoch)
	w.optTime(`,"claimed_at":`, c.ClaimedAt)
	if c.ClaimTTLSeconds != 0 {
		w.key(`,"claim_ttl_seconds":`, false)
		w.b = appendInt(w.b, c.ClaimTTLSeconds)
	}
	w.optTime(`,"lease_expires_at":`, c.LeaseExpiresAt)
	w.optTime(`,"last_heartbeat_at":`, c.LastHeartbeatAt)
	w.key(`,"attempts":`, false)
	w.b = appendInt(w.b, int64(c.Attempts))
	w.key(`,"max_attempts":`, false)
	w.b = appendInt(w.b, int64(c.MaxAttempts))
	w.optTime(`,"defer_until":`, c.DeferUntil)
	if c.BlockedReason != "" {
		w.key(`,"blocked_reason":`, false)
		w.str(c.BlockedReason)
	}
	w.optTime(`,"closed_at":`, c.ClosedAt)
	if c.CloseNote != "" {
		w.key(`,"close_note":`, false)
		w.str(c.CloseNote)
	}
	if c.Progress != nil {
		w.key(`,"progress":`, false)
		w.b = appendInt(w.b, int64(*c.Progress))
	}
	if len(c.Checkpoint) != 0 && w.ok {
		w.key(`,"checkpoint":`, false)
		w.b, w.ok = appendRaw(w.b, c.Checkpoint, indent, w.level)
	}
	w.time(`,"created_at":`, c.CreatedAt)
	w.time(`,"updated_at":`, c.UpdatedAt)
	w.key(`,"version":`, false)
	w.b = appendInt(w.b, c.Version)
	if len(c.Notes) != 0 && w.ok {
		w.key(`,"notes":`, false)
		w.notes(c.Notes)
	}
	if !w.ok {
		return dst[:n], false
	}
	if indent {
		w.b = newline(w.b, level)
	}
	return append(w.b, '}'), true
}

// cardWriter writes the members of a card, compact or indented.
type cardWriter struct {
	b      []byte
	indent bool
	level  int  // of the members
	ok     bool // false once a value is left to the JSON encoder
}

// key starts a member: k is the quoted name and the colon, after a comma
// unless first. The indented form puts the member on a line of its own and
// a space after the colon.
func (w *cardWriter) key(k string, first bool) {
	if !w.indent {
		w.b = append(w.b, k...)
		return
	}
	if !first {
		w.b = append(w.b, ',')
		k = k[1:]
	}
	w.b = newline(w.b, w.level)
	w.b = append(w.b, k...)
	w.b = append(w.b, ' ')
}

func (w *cardWriter) str(s string) { w.b = appendString(w.b, s) }

func (w *cardWriter) time(k string, t time.Time) {
	w.key(k, false)
	var ok bool
	if w.b, ok = appendTime(w.b, t); !ok {
		w.ok = false
	}
}

func (w *cardWriter) optTime(k string, t *time.Time) {
	if t != nil {
		w.time(k, *t)
	}
}

// notes writes a card's notes as the JSON encoder writes a []Note.
func (w *cardWriter) notes(notes []Note) {
	if len(notes) == 0 {
		w.b = append(w.b, '[', ']')
		return
	}
	outer := w.level
	w.b = append(w.b, '[')
	for k := range notes {
		if k > 0 {
			w.b = append(w.b, ',')
		}
		if w.indent {
			w.b = newline(w.b, outer+1)
		}
		w.level = outer + 2
		w.b = append(w.b, '{')
		w.key(`"text":`, true)
		w.str(notes[k].Text)
		w.key(`,"author":`, false)
		w.str(notes[k].Author)
		w.time(`,"at":`, notes[k].At)
		if w.indent {
			w.b = newline(w.b, outer+1)
		}
		w.b = append(w.b, '}')
	}
	w.level = outer
	if w.indent {
		w.b = newline(w.b, outer)
	}
	w.b = append(w.b, ']')
}
