package wire

import (
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The wire types are written without the JSON encoder, byte for byte as
// json.MarshalWithOption(v, json.DisableHTMLEscape()) writes them: the
// members in struct order, omitempty as the encoder applies it, strings
// escaped as it escapes them, times by their MarshalJSON, checkpoints
// compacted. A bl process is short-lived, and the JSON encoder compiles an
// encoder for each type the first time the process encodes one, which
// costs more than the encoding itself. The encoder of each type is in
// codec_gen.go, written from the schema; the values it writes are here.
//
// What they do not handle they report (ok false) rather than guess at: a
// time MarshalJSON refuses (a year outside [0,9999], an offset of a day or
// more) and a checkpoint that is not valid JSON of valid UTF-8 without lone
// surrogate escapes, at most maxRawDepth levels deep. The caller then uses
// the JSON encoder, which writes the same bytes for every value these take.

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
// empty one.
func appendStrings(dst []byte, list []string) []byte {
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
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// stringsSize estimates the length of a list of strings.
func stringsSize(list []string) int {
	n := 2
	for _, s := range list {
		n += len(s) + 3
	}
	return n
}

// AppendCard appends c as the JSON encoder writes a Card with HTML escaping
// off, compact: the form of a snapshot line's card. A nil c is null. ok is
// false for a card it leaves to the JSON encoder (a time outside what RFC
// 3339 holds, a checkpoint that is not plain valid JSON); dst is then as it
// was.
func AppendCard(dst []byte, c *Card) (out []byte, ok bool) {
	if c == nil {
		return append(dst, "null"...), true
	}
	return appendCard(slices.Grow(dst, cardSize(c)), c)
}
