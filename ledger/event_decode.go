package ledger

import (
	"math/bits"
	"strings"
	"time"
	"unicode/utf8"
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
// The event's strings share one copy of the line, so a decoded event never
// refers to the caller's buffer.
func decodeFast(line []byte) (e *Event, ok bool) {
	n := len(line) - crcSuffixLen
	if n < 2 || line[0] != '{' || !crcMemberOK(line[n:]) {
		return nil, false
	}
	blk := new(eventBlock)
	if !blk.decode(string(line[:n])) {
		return nil, false
	}
	return &blk.e, true
}

// eventBlock holds an event and the value its Progress points to in one
// allocation.
type eventBlock struct {
	e        Event
	progress int
}

// fieldsBlock holds Fields and every value its pointers point to in one
// allocation.
type fieldsBlock struct {
	f                             Fields
	title, body, phase, parent    string
	priority, maxAttempts         int
	labels, dependsOn, acceptance []string
	deferUntil                    time.Time
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

// The scanners below read one token at s[i:] and return the index after it,
// or -1 if it is not there or not in the shape they handle; given an index
// of -1 they return -1, so a chain of them needs one check at its end.

// lit reads the literal l.
func lit(s string, i int, l string) int {
	if i < 0 || len(s)-i < len(l) || s[i:i+len(l)] != l {
		return -1
	}
	return i + len(l)
}

// lit2 reads the literal l1+l2. The compiler compares a string with a
// constant of up to eight bytes inline, so longer literals come in two
// parts.
func lit2(s string, i int, l1, l2 string) int {
	return lit(s, lit(s, i, l1), l2)
}

// sep reads the comma that ends a member, or, for the first member, the
// brace that opens the object at s[open].
func sep(s string, i, open int) int {
	if i < 0 || i >= len(s) || s[i] != ',' && i != open {
		return -1
	}
	return i + 1
}

// decode reads the top-level object from s, the line up to its crc member,
// where it must end.
func (blk *eventBlock) decode(s string) bool {
	e := &blk.e
	var i int
	e.V, i = scanInt(s, lit(s, 0, `{"v":`))
	e.ID, i = scanString(s, lit(s, i, `,"id":`))
	e.At, i = scanTime(s, lit(s, i, `,"at":`))
	e.Actor, i = scanString(s, lit2(s, i, `,"actor"`, `:`))
	var op string
	op, i = scanString(s, lit(s, i, `,"op":`))
	e.Op = internOp(op)
	e.Card, i = scanString(s, lit(s, i, `,"card":`))
	// The optional members, each at most once and in this order.
	if j := lit2(s, i, `,"reques`, `t_id":`); j >= 0 {
		e.RequestID, i = scanString(s, j)
	}
	if j := lit(s, lit2(s, i, `,"expect`, `_version`), `":`); j >= 0 {
		e.ExpectVersion, i = scanInt64(s, j)
	}
	if j := lit2(s, i, `,"epoch"`, `:`); j >= 0 {
		e.Epoch, i = scanInt64(s, j)
	}
	if j := lit2(s, i, `,"owner"`, `:`); j >= 0 {
		e.Owner, i = scanString(s, j)
	}
	if j := lit2(s, i, `,"ttl_se`, `conds":`); j >= 0 {
		e.TTLSeconds, i = scanInt64(s, j)
	}
	if j := lit2(s, i, `,"reason`, `":`); j >= 0 {
		e.Reason, i = scanString(s, j)
	}
	if j := lit(s, i, `,"to":`); j >= 0 {
		e.To, i = scanString(s, j)
	}
	if j := lit2(s, i, `,"progre`, `ss":`); j >= 0 {
		blk.progress, i = scanInt(s, j)
		e.Progress = &blk.progress
	}
	// A null checkpoint is left to the JSON decoder.
	if j := lit2(s, i, `,"checkp`, `oint":`); j >= 0 && j < len(s) && s[j] != 'n' {
		if i = skipValue(s, j, 0); i >= 0 {
			e.Checkpoint = []byte(s[j:i])
		}
	}
	if j := lit2(s, i, `,"force"`, `:`); j >= 0 {
		e.Force, i = scanBool(s, j)
	}
	if j := lit2(s, i, `,"fields`, `":`); j >= 0 {
		e.Fields, i = scanFields(s, j)
	}
	return i == len(s)
}

// internOp returns the package's constant for a known op, so an event does
// not keep its line alive through its op.
func internOp(s string) Op {
	switch Op(s) {
	case OpCreate:
		return OpCreate
	case OpUpdate:
		return OpUpdate
	case OpClaim:
		return OpClaim
	case OpHeartbeat:
		return OpHeartbeat
	case OpRelease:
		return OpRelease
	case OpReclaim:
		return OpReclaim
	case OpComplete:
		return OpComplete
	case OpBlock:
		return OpBlock
	case OpUnblock:
		return OpUnblock
	case OpReopen:
		return OpReopen
	case OpLink:
		return OpLink
	case OpUnlink:
		return OpUnlink
	}
	return Op(s)
}

// scanFields reads the fields object, each member at most once and in the
// order of Fields.
func scanFields(s string, i int) (*Fields, int) {
	if i < 0 || i >= len(s) || s[i] != '{' {
		return nil, -1
	}
	blk := new(fieldsBlock)
	f := &blk.f
	open := i
	if j := lit(s, sep(s, i, open), `"title":`); j >= 0 {
		blk.title, i = scanString(s, j)
		f.Title = &blk.title
	}
	if j := lit(s, sep(s, i, open), `"body":`); j >= 0 {
		blk.body, i = scanString(s, j)
		f.Body = &blk.body
	}
	if j := lit(s, sep(s, i, open), `"phase":`); j >= 0 {
		blk.phase, i = scanString(s, j)
		f.Phase = &blk.phase
	}
	if j := lit2(s, sep(s, i, open), `"priorit`, `y":`); j >= 0 {
		blk.priority, i = scanInt(s, j)
		f.Priority = &blk.priority
	}
	if j := lit2(s, sep(s, i, open), `"labels"`, `:`); j >= 0 {
		blk.labels, i = scanStrings(s, j)
		f.Labels = &blk.labels
	}
	if j := lit2(s, sep(s, i, open), `"depends`, `_on":`); j >= 0 {
		blk.dependsOn, i = scanStrings(s, j)
		f.DependsOn = &blk.dependsOn
	}
	if j := lit2(s, sep(s, i, open), `"parent"`, `:`); j >= 0 {
		blk.parent, i = scanString(s, j)
		f.Parent = &blk.parent
	}
	if j := lit2(s, sep(s, i, open), `"accepta`, `nce":`); j >= 0 {
		blk.acceptance, i = scanStrings(s, j)
		f.Acceptance = &blk.acceptance
	}
	if j := lit2(s, sep(s, i, open), `"max_att`, `empts":`); j >= 0 {
		blk.maxAttempts, i = scanInt(s, j)
		f.MaxAttempts = &blk.maxAttempts
	}
	if j := lit2(s, sep(s, i, open), `"defer_u`, `ntil":`); j >= 0 {
		blk.deferUntil, i = scanTime(s, j)
		f.DeferUntil = &blk.deferUntil
	}
	if j := lit(s, lit2(s, sep(s, i, open), `"idempot`, `ency_key`), `":`); j >= 0 {
		f.IdempotencyKey, i = scanString(s, j)
	}
	if i == open {
		i++ // no members
	}
	if i = lit(s, i, "}"); i < 0 {
		return nil, -1
	}
	return f, i
}

// scanInt64 reads an integer: an optional minus sign and at most 18 digits,
// no leading zero, not "-0". What follows is the caller's to check, so a
// fraction or an exponent fails there.
func scanInt64(s string, i int) (int64, int) {
	if i < 0 || i >= len(s) {
		return 0, -1
	}
	neg := s[i] == '-'
	if neg {
		i++
	}
	start := i
	var x int64
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		x = x*10 + int64(s[i]-'0')
	}
	switch n := i - start; {
	case n == 0 || n > 18:
		return 0, -1
	case n > 1 && s[start] == '0':
		return 0, -1 // a leading zero: the next byte breaks the JSON
	case neg && x == 0:
		return 0, -1 // -0
	case neg:
		x = -x
	}
	return x, i
}

// scanInt is scanInt64 for an int.
func scanInt(s string, i int) (int, int) {
	x, j := scanInt64(s, i)
	if int64(int(x)) != x {
		return 0, -1
	}
	return int(x), j
}

// scanBool reads true or false.
func scanBool(s string, i int) (bool, int) {
	if j := lit(s, i, "true"); j >= 0 {
		return true, j
	}
	return false, lit(s, i, "false")
}

// scanStrings reads an array of strings; [] is an empty, non-nil slice.
func scanStrings(s string, i int) ([]string, int) {
	if i = lit(s, i, "["); i < 0 {
		return nil, -1
	}
	list := []string{}
	if j := lit(s, i, "]"); j >= 0 {
		return list, j
	}
	for {
		var str string
		if str, i = scanString(s, i); i < 0 || i >= len(s) {
			return nil, -1
		}
		list = append(list, str)
		switch s[i] {
		case ']':
			return list, i + 1
		case ',':
			i++
		default:
			return nil, -1
		}
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

// load8 returns s[i:i+8] as a little-endian word.
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// nextSpecial returns the index of the first byte at or after s[i] that a
// string does not hold as it is (a quote, a backslash, a control character
// or a byte of a multi-byte sequence), or len(s).
//
// It looks at eight bytes at a time. In the mask, the high bit of a byte is
// set where x has a byte of 0x80 or more, or where subtracting 0x20 (for
// control characters) or 1 from x with the quote or the backslash xored out
// (for those) wraps. A subtraction borrows from the next byte only where a
// byte wraps, so the lowest byte flagged is special even if later ones are
// not.
func nextSpecial(s string, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		q, b := x^(lo*'"'), x^(lo*'\\')
		if m := (x | (x - lo*0x20) | (q - lo) | (b - lo)) & hi; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(s); i++ {
		if strByte[s[i]] != 0 {
			return i
		}
	}
	return i
}

// scanString reads a string at s[i:] and returns it and the index after its
// closing quote, or -1. A string with no escapes is a substring of s.
func scanString(s string, i int) (string, int) {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	if i < 0 || i >= len(s) || s[i] != '"' {
		return "", -1
	}
	i++
	start := i
	for {
		// nextSpecial, inline
		for i+8 <= len(s) {
			x := load8(s, i)
			q, b := x^(lo*'"'), x^(lo*'\\')
			if m := (x | (x - lo*0x20) | (q - lo) | (b - lo)) & hi; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i+8 > len(s) {
			i = nextSpecial(s, i)
		}
		if i >= len(s) {
			return "", -1
		}
		switch strByte[s[i]] {
		case 1:
			if s[i] == '"' {
				return s[start:i], i + 1
			}
			return unescape(s, start, i)
		case 3:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", -1
			}
			i += size
		default:
			return "", -1
		}
	}
}

// unescape finishes reading a string that starts at s[start:] and has its
// first backslash at s[i].
func unescape(s string, start, i int) (string, int) {
	var b strings.Builder
	b.Grow(i - start + 16)
	b.WriteString(s[start:i])
	for i < len(s) {
		c := s[i]
		switch strByte[c] {
		case 0:
			b.WriteByte(c)
			i++
		case 1:
			if c == '"' {
				return b.String(), i + 1
			}
			if i+1 >= len(s) {
				return "", -1
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
					return "", -1
				}
				i += 6
				if 0xd800 <= r && r <= 0xdfff {
					// Only a high surrogate followed by an escaped low one.
					if r >= 0xdc00 || i+1 >= len(s) || s[i] != '\\' || s[i+1] != 'u' {
						return "", -1
					}
					lo, ok := hex4(s, i+2)
					if !ok || lo < 0xdc00 || lo > 0xdfff {
						return "", -1
					}
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 6
				}
				b.WriteRune(r)
				continue
			default:
				return "", -1
			}
			i += 2
		case 2:
			return "", -1
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", -1
			}
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return "", -1
}

// hex4 reads the four hex digits of a \u escape at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
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

// scanTime reads a time at s[i:] the way time.Time.UnmarshalJSON would, for
// the one form EncodeLine writes: "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z".
func scanTime(s string, i int) (time.Time, int) {
	const longest = len(`"2006-01-02T15:04:05.999999999Z"`)
	if i < 0 || i >= len(s) || s[i] != '"' {
		return time.Time{}, -1
	}
	end := strings.IndexByte(s[i+1:min(len(s), i+longest)], '"')
	if end < 0 {
		return time.Time{}, -1
	}
	t, ok := parseUTC(s[i+1 : i+1+end])
	if !ok {
		return time.Time{}, -1
	}
	return t, i + end + 2
}

// parseUTC parses "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z", giving the same Time as
// time.Parse(time.RFC3339Nano, s).
func parseUTC(s string) (time.Time, bool) {
	n := len(s)
	if n < len("2006-01-02T15:04:05Z") || n > len("2006-01-02T15:04:05.999999999Z") || s[n-1] != 'Z' ||
		s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	bad := false // a non-digit seen
	digit := func(i int) int {
		c := s[i] - '0'
		bad = bad || c > 9
		return int(c)
	}
	year := digit(0)*1000 + digit(1)*100 + digit(2)*10 + digit(3)
	month := digit(5)*10 + digit(6)
	day := digit(8)*10 + digit(9)
	hour := digit(11)*10 + digit(12)
	minute := digit(14)*10 + digit(15)
	sec := digit(17)*10 + digit(18)
	nsec := 0
	if n > len("2006-01-02T15:04:05Z") {
		// ".f{1,9}": at least one digit, scaled to nanoseconds
		if n < len("2006-01-02T15:04:05.0Z") || s[19] != '.' {
			return time.Time{}, false
		}
		for i := 20; i < n-1; i++ {
			nsec = nsec*10 + digit(i)
		}
		for range len("2006-01-02T15:04:05.999999999Z") - n {
			nsec *= 10
		}
	}
	if bad || month < 1 || month > 12 || day < 1 || day > daysInMonth(month, year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	// Days since 1970-01-01 of a proleptic Gregorian date, counting years
	// from March so the leap day is the last of its year.
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
	days := int64(era)*146097 + int64(doe) - 719468
	return time.Unix(days*86400+int64(hour*3600+minute*60+sec), int64(nsec)).UTC(), true
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

// skipValue skips a JSON value at s[i:] that is valid, written without
// whitespace and at most 64 levels deep, and returns the index after it, or
// -1.
func skipValue(s string, i, depth int) int {
	if i >= len(s) || depth > 64 {
		return -1
	}
	switch c := s[i]; {
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i++
		if i < len(s) && s[i] == end {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(s) || s[i] != '"' {
					return -1
				}
				if i = skipString(s, i); i < 0 || i >= len(s) || s[i] != ':' {
					return -1
				}
				i++
			}
			if i = skipValue(s, i, depth+1); i < 0 || i >= len(s) {
				return -1
			}
			switch s[i] {
			case end:
				return i + 1
			case ',':
				i++
			default:
				return -1
			}
		}
	case c == '"':
		return skipString(s, i)
	case c == 't':
		return skipLiteral(s, i, "true")
	case c == 'f':
		return skipLiteral(s, i, "false")
	case c == 'n':
		return skipLiteral(s, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(s, i)
	}
	return -1
}

func skipLiteral(s string, i int, lit string) int {
	if strings.HasPrefix(s[i:], lit) {
		return i + len(lit)
	}
	return -1
}

// skipNumber skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at s[i:].
// What follows is the caller's to check.
func skipNumber(s string, i int) int {
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

// skipString skips a string at s[i:] with valid escapes and valid UTF-8.
func skipString(s string, i int) int {
	for i++; i < len(s); {
		switch strByte[s[i]] {
		case 0:
			i++
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
				if _, ok := hex4(s, i+2); !ok {
					return -1
				}
				i += 6
			default:
				return -1
			}
		case 2:
			return -1
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			i += size
		}
	}
	return -1
}
