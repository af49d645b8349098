package wire

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The package's one JSON grammar. WalkValue reads any JSON value: for the
// decoder, to check a checkpoint it then copies as it is; for the encoder,
// to check one and write it compacted; for config.json, to step over the
// members it does not know. The fast paths take only what it takes and
// leave the rest to the JSON decoder or encoder.

// maxRawDepth is the deepest nesting of a value WalkValue takes.
const maxRawDepth = 64

// appendRaw appends src, a JSON document, as the JSON encoder writes a
// json.RawMessage: compacted, strings and numbers as they are written. ok
// is false for anything but one valid value, surrounded by white space at
// most, of valid UTF-8 with no lone surrogate escape, at most maxRawDepth
// levels deep; dst is then as it was.
func appendRaw(dst, src []byte) (out []byte, ok bool) {
	n := len(dst)
	out, i := WalkValue(dst, src, SkipSpace(src, 0), true, 0)
	if i < 0 || SkipSpace(src, i) != len(src) {
		return dst[:n], false
	}
	return out, true
}

// skipValue returns the index after the JSON value at s[i:], written with
// no white space, or -1. Its strings need valid escapes and valid UTF-8;
// an escaped surrogate is taken as it is, alone or not.
func skipValue(s []byte, i int) int {
	_, j := WalkValue(nil, s, i, false, 0)
	return j
}

// SkipSpace returns the index of the first byte at or after src[i] that is
// not JSON white space.
func SkipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\n' || src[i] == '\r' || src[i] == '\t') {
		i++
	}
	return i
}

// WalkValue reads the value at src[i:] and returns the index after it, or
// -1. With compact set it is the encoder's walk: white space between
// tokens is stepped over, the value is appended to dst without it, and a
// lone surrogate escape is refused (the JSON encoder rewrites those).
// Without, no white space is taken and nothing is appended.
func WalkValue(dst, src []byte, i int, compact bool, depth int) ([]byte, int) {
	if i >= len(src) {
		return dst, -1
	}
	if c := src[i]; c == '{' || c == '[' {
		return walkContainer(dst, src, i, compact, depth)
	}
	var j int
	switch c := src[i]; {
	case c == '"':
		j = skipString(src, i, compact)
	case c == 't':
		j = skipLiteral(src, i, "true")
	case c == 'f':
		j = skipLiteral(src, i, "false")
	case c == 'n':
		j = skipLiteral(src, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		j = skipNumber(src, i)
	default:
		return dst, -1
	}
	if j >= 0 && compact {
		dst = append(dst, src[i:j]...)
	}
	return dst, j
}

// walkContainer is WalkValue of the object or array at src[i]: its
// members (key, colon, value) or elements, separated by commas, up to
// the closing bracket; nested no deeper than maxRawDepth.
func walkContainer(dst, src []byte, i int, compact bool, depth int) ([]byte, int) {
	if depth >= maxRawDepth {
		return dst, -1
	}
	c, end := src[i], byte('}')
	if c == '[' {
		end = ']'
	}
	if compact {
		dst = append(dst, c)
	}
	if i = space(src, i+1, compact); i < len(src) && src[i] == end {
		if compact {
			dst = append(dst, end)
		}
		return dst, i + 1
	}
	for {
		if c == '{' {
			if dst, i = walkMemberKey(dst, src, i, compact); i < 0 {
				return dst, -1
			}
		}
		if dst, i = WalkValue(dst, src, i, compact, depth+1); i < 0 {
			return dst, -1
		}
		if i = space(src, i, compact); i >= len(src) {
			return dst, -1
		}
		switch src[i] {
		case ',':
			if compact {
				dst = append(dst, ',')
			}
			i = space(src, i+1, compact)
		case end:
			if compact {
				dst = append(dst, end)
			}
			return dst, i + 1
		default:
			return dst, -1
		}
	}
}

// walkMemberKey walks an object member's key and its colon, and returns
// the index of the member's value.
func walkMemberKey(dst, src []byte, i int, compact bool) ([]byte, int) {
	j := skipString(src, i, compact)
	if j < 0 {
		return dst, -1
	}
	if compact {
		dst = append(dst, src[i:j]...)
	}
	if i = space(src, j, compact); i >= len(src) || src[i] != ':' {
		return dst, -1
	}
	if compact {
		dst = append(dst, ':')
	}
	return dst, space(src, i+1, compact)
}

// space is SkipSpace when white space is taken, else i.
func space(src []byte, i int, take bool) int {
	if take {
		return SkipSpace(src, i)
	}
	return i
}

func skipLiteral(s []byte, i int, lit string) int {
	if len(s)-i >= len(lit) && string(s[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// skipNumber skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at s[i:].
// What follows is the caller's to check.
func skipNumber(s []byte, i int) int {
	digits := func() int {
		start := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return -1
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return -1
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return -1
		}
	}
	return i
}

// skipString skips the string at s[i:], which must have valid escapes and
// valid UTF-8, and returns the index after it, or -1. With pairs set, an
// escaped surrogate must be a high one followed by an escaped low one.
func skipString(s []byte, i int, pairs bool) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	for i++; ; {
		if i = nextSpecial(s, i); i >= len(s) {
			return -1
		}
		switch strByte[s[i]] {
		case 1:
			if s[i] == '"' {
				return i + 1
			}
			if i+1 >= len(s) {
				return -1
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					return -1
				}
				i += 6
				if pairs && 0xd800 <= r && r <= 0xdfff {
					if r >= 0xdc00 || i+1 >= len(s) || s[i] != '\\' || s[i+1] != 'u' {
						return -1
					}
					if lo, ok := hex4(s, i+2); !ok || lo < 0xdc00 || lo > 0xdfff {
						return -1
					}
					i += 6
				}
			default:
				return -1
			}
		case 3:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			i += size
		default:
			return -1 // a control character
		}
	}
}

// RepeatedKey returns a key that one object of the JSON document src
// names twice, at any depth, or "" when none does. The JSON decoder takes
// the last of two such members while a person reading the line sees the
// first, so a line that repeats a key is damage. Keys compare as the
// decoder matches them to fields: unescaped and without regard to case
// ("op", "o\u0070" and "OP" are one key). A checkpoint is the writer's own
// JSON, kept as it is, so the objects inside a checkpoint member are not
// looked into. A document that is not valid JSON gives "": the decoder
// refuses it anyway.
func RepeatedKey(src []byte) string {
	key, _ := walkKeys(src, SkipSpace(src, 0), 0)
	return key
}

// walkKeys reads the value at src[i:], white space allowed, and returns
// the first repeated key in it and the index after it (-1 when the value
// is not valid JSON).
func walkKeys(src []byte, i, depth int) (string, int) {
	if i >= len(src) {
		return "", -1
	}
	c := src[i]
	if c != '{' && c != '[' {
		_, j := WalkValue(nil, src, i, true, depth)
		return "", j
	}
	if depth >= maxRawDepth {
		return "", -1
	}
	end := byte('}')
	if c == '[' {
		end = ']'
	}
	if i = SkipSpace(src, i+1); i < len(src) && src[i] == end {
		return "", i + 1
	}
	var seen map[string]bool
	for {
		opaque := false
		if c == '{' {
			var repeated string
			if repeated, opaque, i = memberStart(src, i, &seen); repeated != "" || i < 0 {
				return repeated, i
			}
		}
		var key string
		if opaque {
			_, i = WalkValue(nil, src, i, true, depth+1)
		} else {
			key, i = walkKeys(src, i, depth+1)
		}
		if key != "" || i < 0 {
			return key, i
		}
		if i = SkipSpace(src, i); i >= len(src) {
			return "", -1
		}
		switch src[i] {
		case ',':
			i = SkipSpace(src, i+1)
		case end:
			return "", i + 1
		default:
			return "", -1
		}
	}
}

// memberStart reads an object member's key and colon at src[i] and returns
// the key if seen (keys folded) holds it already, whether the member's
// value is opaque to the check (a checkpoint is the agent's own), and the
// index of the value (for a repeated key, the index after the key).
func memberStart(src []byte, i int, seen *map[string]bool) (repeated string, opaque bool, next int) {
	key, folded, j := memberKey(src, i)
	if j < 0 {
		return "", false, -1
	}
	if (*seen)[folded] {
		return key, false, j
	}
	if *seen == nil {
		*seen = map[string]bool{}
	}
	(*seen)[folded] = true
	if i = SkipSpace(src, j); i >= len(src) || src[i] != ':' {
		return "", false, -1
	}
	return "", folded == "checkpoint", SkipSpace(src, i+1)
}

// memberKey reads the key at src[i], unescaped and folded as repeated keys
// are compared, and returns the index after it (-1 when it is no string).
func memberKey(src []byte, i int) (key, folded string, j int) {
	start, stop, esc, j := ScanString(src, i)
	if j < 0 {
		return "", "", -1
	}
	key = esc
	if esc == "" {
		key = string(src[start:stop])
	}
	return key, foldKey(key), j
}

// foldKey maps a key to one spelling per case-insensitive class: each
// rune to the smallest rune it folds to.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}
