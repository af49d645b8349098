package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

// decodeFast decodes a framed ledger line (without its newline, crc member
// included) written in the shape EncodeLine produces: the Event keys in
// struct order with none repeated or unknown, v, id, at, actor, op and card
// present, no whitespace, integers of at most 18 digits without fraction or
// exponent, times in UTC as RFC 3339 with at most nine fractional digits, no
// nulls, and strings of valid UTF-8 with no lone surrogate escapes. It
// reports any other line as not handled (ok false), never as an error, and
// the caller decodes that line with the JSON decoder, which gives the same
// Event as this function for every line this function handles.
//
// The members are read by eventMembers, written from the schema in
// codec_gen.go; the readers of the values are below. The decoded event
// does not refer to line.
func decodeFast(line []byte) (e *Event, ok bool) {
	n := len(line) - crcSuffixLen
	if n < 2 || line[0] != '{' || !crcMemberOK(line[n:]) {
		return nil, false
	}
	d := fastDecoder{b: line[:n]}
	blk := new(eventBlock)
	if d.eventMembers(0, &blk.v, blk) != n {
		return nil, false
	}
	d.finish()
	return &blk.v, true
}

// crcMemberOK reports whether b is `,"crc":"xxxxxxxx"}` with eight hex
// digits: a member the JSON decoder skips, since Event has no crc field.
func crcMemberOK(b []byte) bool {
	const head = `,"crc":"`
	if len(b) != crcSuffixLen || string(b[:len(head)]) != head || b[len(b)-2] != '"' || b[len(b)-1] != '}' {
		return false
	}
	for _, c := range b[len(head) : len(head)+8] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// fastDecoder reads b, a line up to its crc member. The strings it reads
// without escapes are copied out together once the whole line has been
// read: one allocation for all of them, which the event keeps alive and
// nothing else.
type fastDecoder struct {
	b     []byte
	spans [16]span // the strings to copy out
	n     int      // spans in use
	total int      // their length
}

// span is a string of the line, b[start:end], and where it goes.
type span struct {
	dst        *string
	start, end int
}

// finish copies the strings out.
func (d *fastDecoder) finish() {
	if d.total == 0 {
		return
	}
	var sb strings.Builder
	sb.Grow(d.total)
	for _, sp := range d.spans[:d.n] {
		sb.Write(d.b[sp.start:sp.end])
	}
	all := sb.String()
	off := 0
	for _, sp := range d.spans[:d.n] {
		end := off + sp.end - sp.start
		*sp.dst = all[off:end]
		off = end
	}
}

// The readers below read one token at b[i:] and return the index after it,
// or -1 if it is not there or not in the shape they handle; given an index
// of -1 they return -1, so a chain of them needs one check at its end.

// lit reads the literal l. The compiler compares a constant of up to eight
// bytes inline, so longer literals come in parts.
func lit(b []byte, i int, l string) int {
	if i < 0 || len(b)-i < len(l) || string(b[i:i+len(l)]) != l {
		return -1
	}
	return i + len(l)
}

// sep reads the comma that ends a member, or, for the first member, the
// brace that opens the object at b[open].
func sep(b []byte, i, open int) int {
	if i < 0 || i >= len(b) || b[i] != ',' && i != open {
		return -1
	}
	return i + 1
}

// closeObject reads the '}' that ends the object opened at b[open], after
// its members up to b[i:]; an object with no members is "{}".
func closeObject(b []byte, i, open int) int {
	if i == open {
		i++
	}
	return lit(b, i, "}")
}

// placeTimes points each *tp[k] at a copy of tv[k], the copies in one
// allocation: the optional times of an object, gathered as they are read.
func placeTimes(tv []time.Time, tp []**time.Time) {
	if len(tv) == 0 {
		return
	}
	all := make([]time.Time, len(tv))
	copy(all, tv)
	for k := range all {
		*tp[k] = &all[k]
	}
}

// ScanInt64 reads an integer: an optional minus sign and at most 18 digits,
// no leading zero, not "-0". What follows is the caller's to check, so a
// fraction or an exponent fails there.
func ScanInt64(b []byte, i int) (int64, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	neg := b[i] == '-'
	if neg {
		i++
	}
	start := i
	var x int64
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		x = x*10 + int64(b[i]-'0')
	}
	switch n := i - start; {
	case n == 0 || n > 18:
		return 0, -1
	case n > 1 && b[start] == '0':
		return 0, -1 // a leading zero: the next byte breaks the JSON
	case neg && x == 0:
		return 0, -1 // -0
	case neg:
		x = -x
	}
	return x, i
}

// ScanInt is ScanInt64 for an int.
func ScanInt(b []byte, i int) (int, int) {
	x, j := ScanInt64(b, i)
	if int64(int(x)) != x {
		return 0, -1
	}
	return int(x), j
}

// scanBool reads true or false.
func scanBool(b []byte, i int) (bool, int) {
	if j := lit(b, i, "true"); j >= 0 {
		return true, j
	}
	return false, lit(b, i, "false")
}

// strs reads an array of strings; [] is an empty, non-nil slice.
func (d *fastDecoder) strs(i int) ([]string, int) {
	b := d.b
	if i = lit(b, i, "["); i < 0 {
		return nil, -1
	}
	if j := lit(b, i, "]"); j >= 0 {
		return []string{}, j
	}
	type elem struct {
		start, end int
		esc        string
	}
	elems := make([]elem, 0, 8)
	for {
		start, end, esc, j := ScanString(b, i)
		if j < 0 || j >= len(b) {
			return nil, -1
		}
		elems = append(elems, elem{start, end, esc})
		if b[j] == ']' {
			i = j + 1
			break
		}
		if b[j] != ',' {
			return nil, -1
		}
		i = j + 1
	}
	list := make([]string, len(elems))
	for k, el := range elems {
		if el.esc != "" || el.start == el.end {
			list[k] = el.esc
		} else {
			d.span(&list[k], el.start, el.end)
		}
	}
	return list, i
}

// span has b[start:end] copied out into *dst, which must stay where it is
// until finish.
func (d *fastDecoder) span(dst *string, start, end int) {
	if d.n < len(d.spans) {
		d.spans[d.n] = span{dst, start, end}
		d.n++
		d.total += end - start
	} else {
		*dst = string(d.b[start:end])
	}
}

// str reads a string into *dst, which must stay where it is until finish.
// It is ScanString, with the string placed as it is found.
func (d *fastDecoder) str(i int, dst *string) int {
	b := d.b
	if i < 0 || i >= len(b) || b[i] != '"' {
		return -1
	}
	i++
	start := i
	for {
		if i = nextSpecial(b, i); i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			if i > start {
				d.span(dst, start, i)
			}
			return i + 1
		case c == '\\':
			esc, j := unescape(b, start, i)
			if j >= 0 {
				*dst = esc
			}
			return j
		case c < 0x80:
			return -1 // a control character
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return -1
		}
		i += size
	}
}

// strByte classifies string bytes: 0 is itself, 1 ends the string or starts
// an escape (quote, backslash), 2 is a control character (invalid), 3 starts
// a multi-byte UTF-8 sequence.
var strByte = func() (t [256]byte) {
	for c := 0; c < 0x20; c++ {
		t[c] = 2
	}
	t['"'], t['\\'] = 1, 1
	for c := 0x80; c < 0x100; c++ {
		t[c] = 3
	}
	return t
}()

// specialMask flags the bytes of the little-endian word x that a string does
// not hold as they are: a quote, a backslash, a control character or a byte
// of a multi-byte sequence. The high bit of a byte is set where x has a byte
// of 0x80 or more, or where subtracting 0x20 (for control characters) or 1
// from x with the quote or the backslash xored out (for those) wraps. A
// subtraction borrows from the next byte only where a byte wraps, so the
// lowest byte flagged is special even if later ones are not.
func specialMask(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q, bs := x^(lo*'"'), x^(lo*'\\')
	return (x | (x - lo*0x20) | (q - lo) | (bs - lo)) & hi
}

// nextSpecial returns the index of the first byte at or after b[i] that a
// string does not hold as it is, or len(b).
func nextSpecial(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && strByte[b[i]] == 0 {
		i++
	}
	return i
}

// ScanString reads a string. One without escapes is b[start:end] and esc is
// empty; for one with escapes, esc is its value.
func ScanString(b []byte, i int) (start, end int, esc string, next int) {
	if i < 0 || i >= len(b) || b[i] != '"' {
		return 0, 0, "", -1
	}
	i++
	start = i
	for {
		if i = nextSpecial(b, i); i >= len(b) {
			return 0, 0, "", -1
		}
		switch strByte[b[i]] {
		case 1:
			if b[i] == '"' {
				return start, i, "", i + 1
			}
			esc, next = unescape(b, start, i)
			return 0, 0, esc, next
		case 3:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, 0, "", -1
			}
			i += size
		default:
			return 0, 0, "", -1
		}
	}
}

// unescape finishes reading a string that starts at s[start:] and has its
// first backslash at s[i].
func unescape(s []byte, start, i int) (string, int) {
	var b strings.Builder
	b.Grow(i - start + 32)
	b.Write(s[start:i])
	for i < len(s) {
		// s[i] is not held as it is
		switch strByte[s[i]] {
		case 1:
			if s[i] == '"' {
				return b.String(), i + 1
			}
			if i = unescapeOne(&b, s, i); i < 0 {
				return "", -1
			}
		case 3:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", -1
			}
			b.Write(s[i : i+size])
			i += size
		default:
			return "", -1
		}
		j := nextSpecial(s, i)
		b.Write(s[i:j])
		i = j
	}
	return "", -1
}

// unescapeOne writes the character the escape at s[i] (a backslash)
// stands for and returns the index after it, or -1 for an escape JSON
// does not have; a surrogate pair is one character, a lone surrogate is
// refused.
func unescapeOne(b *strings.Builder, s []byte, i int) int {
	if i+1 >= len(s) {
		return -1
	}
	switch s[i+1] {
	case '"', '\\', '/':
		b.WriteByte(s[i+1])
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, ok := hex4(s, i+2)
		if !ok {
			return -1
		}
		i += 4
		if 0xd800 <= r && r <= 0xdfff {
			// Only a high surrogate followed by an escaped low one.
			if r >= 0xdc00 || i+3 >= len(s) || s[i+2] != '\\' || s[i+3] != 'u' {
				return -1
			}
			lo, ok := hex4(s, i+4)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return -1
			}
			r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			i += 6
		}
		b.WriteRune(r)
	default:
		return -1
	}
	return i + 2
}

// hex4 reads the four hex digits of a \u escape at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// scanTime reads a time the way time.Time.UnmarshalJSON would, for the one
// form EncodeLine writes: "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z", which
// time.Parse(time.RFC3339Nano, ...) reads as this Time.
func ScanTime(b []byte, i int) (time.Time, int) {
	const (
		lo = 0x0101010101010101
		// The separators of "YYYY-MM-", "DDTHH:MM" and "HH:MM:SS" as
		// little-endian words, and masks of their digits.
		sep0, digits0 = 0x2d00002d00000000, 0x00ffff00ffffffff
		sep1, digits1 = 0x00003a0000540000, 0xffff00ffff00ffff
		sep2, digits2 = 0x00003a00003a0000, 0xffff00ffff00ffff
		high          = 0xf0f0f0f0f0f0f0f0
	)
	// The quote, the 19 bytes before the fraction, and room for `Z"`.
	if i < 0 || len(b)-i < len(`"2006-01-02T15:04:05Z"`) || b[i] != '"' {
		return time.Time{}, -1
	}
	w0, w1, w2 := binary.LittleEndian.Uint64(b[i+1:]), binary.LittleEndian.Uint64(b[i+9:]), binary.LittleEndian.Uint64(b[i+12:])
	// A byte xor '0' is its value if it is a digit, and a digit's value
	// plus 6 stays below 16.
	d0, d1, d2 := w0^lo*'0', w1^lo*'0', w2^lo*'0'
	if w0&^digits0 != sep0 || w1&^digits1 != sep1 || w2&^digits2 != sep2 ||
		(d0|(d0+lo*6))&high&digits0 != 0 || (d1|(d1+lo*6))&high&digits1 != 0 || (d2|(d2+lo*6))&high&digits2 != 0 {
		return time.Time{}, -1
	}
	digit := func(w uint64, k int) int { return int(w >> (8 * k) & 0xff) }
	year := digit(d0, 0)*1000 + digit(d0, 1)*100 + digit(d0, 2)*10 + digit(d0, 3)
	month := digit(d0, 5)*10 + digit(d0, 6)
	day := digit(d1, 0)*10 + digit(d1, 1)
	hour := digit(d2, 0)*10 + digit(d2, 1)
	minute := digit(d2, 3)*10 + digit(d2, 4)
	sec := digit(d2, 6)*10 + digit(d2, 7)
	if month < 1 || month > 12 || day < 1 || day > daysInMonth(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, -1
	}
	nsec, j := scanFraction(b, i+len(`"2006-01-02T15:04:05`))
	if j < 0 {
		return time.Time{}, -1
	}
	if j = lit(b, j, `Z"`); j < 0 {
		return time.Time{}, -1
	}
	return time.Unix(civilDays(year, month, day)*86400+int64(hour*3600+minute*60+sec), int64(nsec)).UTC(), j
}

// scanFraction reads the optional fraction of seconds at b[j:], one to
// nine digits after a '.', as nanoseconds, and returns the index after it
// (-1 for a '.' without digits or with more than nine).
func scanFraction(b []byte, j int) (nsec, next int) {
	if b[j] != '.' {
		return 0, j
	}
	j++
	start := j
	for ; j < len(b) && j-start < 10 && '0' <= b[j] && b[j] <= '9'; j++ {
		nsec = nsec*10 + int(b[j]-'0')
	}
	if j == start || j-start > 9 {
		return 0, -1
	}
	for range 9 - (j - start) {
		nsec *= 10
	}
	return nsec, j
}

// civilDays is the days since 1970-01-01 of a proleptic Gregorian date,
// counting years from March so the leap day is the last of its year.
func civilDays(year, month, day int) int64 {
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = -1
	}
	yoe := y - era*400
	doy := (153*((month+9)%12)+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func daysInMonth(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// ErrRepeatedKey is the damage of a line that names a key twice.
var ErrRepeatedKey = errors.New("repeated key")

// decodeSlow decodes a framed ledger line decodeFast did not handle, with
// the JSON decoder, first refusing a line that repeats a key (decodeFast
// never takes one: it reads each key at most once).
func decodeSlow(line []byte) (*Event, error) {
	if k := RepeatedKey(line); k != "" {
		return nil, fmt.Errorf("%w: %w %q: the JSON decoder would take its last value while a reader sees the first", ErrFraming, ErrRepeatedKey, k)
	}
	e := new(Event)
	if err := json.Unmarshal(line, e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFraming, err)
	}
	return e, nil
}
