package fold

import (
	"strings"
	"unicode/utf8"
)

// Deciding whether two globs share a path, in time polynomial in their
// lengths. A glob is a list of segments; a segment is "**" (any number of
// path segments, none included) or a pattern of tokens: a rune, '?' (any
// rune), a class [...] (a set of runes) or '*' (any run of runes). No rune
// is '/' inside a segment.
//
// Two segment lists share a path when the product of their automata reaches
// both ends: a table over (i, j), each cell decided once (listsMeet). Two
// patterns share a segment when the product of their token lists does:
// a row-by-row table over (p, q) (patternsMeet). A pair of 512-byte globs
// thus costs at most about 512 x 512 cell visits, whatever their stars.
//
// The answer is exact for every glob path.Match accepts, save that a class
// matching no rune at all (as [^\x00-\x{10FFFF}]) is taken to match some:
// conservative, never "no overlap" where there is one. A meter that runs
// out or is stopped answers "overlap" too (see meter).

// segment is one parsed glob segment.
type segment struct {
	any  bool  // "**"
	toks []tok // the pattern's tokens
}

// tok is one token of a segment pattern.
type tok struct {
	kind   tokKind
	r      rune     // tokRune
	ranges []rrange // tokClass: sorted, disjoint, '/' left out
}

type tokKind uint8

const (
	tokRune  tokKind = iota
	tokOne           // ?
	tokStar          // *
	tokClass         // [...]
)

// rrange is a closed range of runes.
type rrange struct{ lo, hi rune }

// parseGlob splits a glob into segments: runs of "**" collapse into one
// and, as globSegs says, a last segment without wildcards gets a "**"
// after it.
func parseGlob(g string) []segment {
	var out []segment
	for _, s := range globSegs(g) {
		if s == "**" {
			if len(out) > 0 && out[len(out)-1].any {
				continue
			}
			out = append(out, segment{any: true})
			continue
		}
		out = append(out, segment{toks: parsePattern(s)})
	}
	return out
}

// literalSegs is a file path as segments that match only themselves.
func literalSegs(file string) []segment {
	parts := strings.Split(file, "/")
	out := make([]segment, len(parts))
	for i, p := range parts {
		toks := make([]tok, 0, len(p))
		for i := 0; i < len(p); {
			r, n := literalRune(p[i:])
			toks = append(toks, tok{kind: tokRune, r: r})
			i += n
		}
		out[i] = segment{toks: toks}
	}
	return out
}

// parsePattern reads a segment pattern as path.Match does. Runs of '*'
// collapse into one. A pattern path.Match would refuse (ValidPath keeps
// them out of the ledger) reads as '*' from where it goes wrong: it then
// overlaps more, never less.
func parsePattern(p string) []tok {
	var out []tok
	for i := 0; i < len(p); {
		switch p[i] {
		case '*':
			if len(out) == 0 || out[len(out)-1].kind != tokStar {
				out = append(out, tok{kind: tokStar})
			}
			i++
		case '?':
			out = append(out, tok{kind: tokOne})
			i++
		case '[':
			t, n, ok := parseClass(p[i+1:])
			if !ok {
				return append(out, tok{kind: tokStar})
			}
			out = append(out, t)
			i += 1 + n
		case '\\':
			if i+1 >= len(p) {
				return append(out, tok{kind: tokStar})
			}
			r, n := literalRune(p[i+1:])
			out = append(out, tok{kind: tokRune, r: r})
			i += 1 + n
		default:
			r, n := literalRune(p[i:])
			out = append(out, tok{kind: tokRune, r: r})
			i += n
		}
	}
	return out
}

// literalRune reads one rune of a literal. A byte that is not UTF-8 reads
// as a value of its own below zero: path.Match compares literals byte by
// byte, so it matches only itself (and '?'), never U+FFFD.
func literalRune(s string) (rune, int) {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n == 1 {
		return -1 - rune(s[0]), 1
	}
	return r, n
}

// parseClass reads a class after its '[': the token and the bytes read,
// the closing ']' included.
func parseClass(p string) (tok, int, bool) {
	i, neg := 0, false
	if i < len(p) && p[i] == '^' {
		neg, i = true, i+1
	}
	var rs []rrange
	for {
		if i < len(p) && p[i] == ']' && len(rs) > 0 {
			i++
			break
		}
		lo, n, ok := classRune(p[i:])
		if !ok {
			return tok{}, 0, false
		}
		i += n
		hi := lo
		if i < len(p) && p[i] == '-' {
			if hi, n, ok = classRune(p[i+1:]); !ok {
				return tok{}, 0, false
			}
			i += 1 + n
		}
		rs = append(rs, rrange{lo, hi})
	}
	set := normalise(rs)
	if neg {
		set = complement(set)
	}
	return tok{kind: tokClass, ranges: withoutSlash(set)}, i, true
}

// classRune reads one rune of a class, as path.Match's getEsc does.
func classRune(p string) (rune, int, bool) {
	if p == "" || p[0] == '-' || p[0] == ']' {
		return 0, 0, false
	}
	n := 0
	if p[0] == '\\' {
		n = 1
		if len(p) == 1 {
			return 0, 0, false
		}
	}
	r, m := utf8.DecodeRuneInString(p[n:])
	if r == utf8.RuneError && m == 1 {
		return 0, 0, false
	}
	return r, n + m, true
}

// normalise sorts ranges and merges those that touch; an empty range (lo
// above hi) matches nothing and goes.
func normalise(rs []rrange) []rrange {
	var out []rrange
	for _, r := range rs {
		if r.lo <= r.hi {
			out = append(out, r)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: classes are short
		for j := i; j > 0 && out[j].lo < out[j-1].lo; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// complement is every rune not in the sorted, disjoint rs.
func complement(rs []rrange) []rrange {
	var out []rrange
	next := rune(0)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, rrange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, rrange{next, utf8.MaxRune})
	}
	return out
}

// withoutSlash takes '/' out of a set: no segment holds one.
func withoutSlash(rs []rrange) []rrange {
	var out []rrange
	for _, r := range rs {
		if r.lo <= '/' && '/' <= r.hi {
			if r.lo < '/' {
				out = append(out, rrange{r.lo, '/' - 1})
			}
			if r.hi > '/' {
				out = append(out, rrange{'/' + 1, r.hi})
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// meet reports whether one rune matches both tokens, neither a star.
func meet(x, y *tok) bool {
	if x.kind > y.kind {
		x, y = y, x
	}
	switch {
	case x.kind == tokRune && y.kind == tokRune:
		return x.r == y.r
	case x.kind == tokRune && y.kind == tokOne:
		return x.r != '/'
	case x.kind == tokRune: // a class, which path.Match tests a decoded rune against
		r := x.r
		if r < 0 {
			r = utf8.RuneError
		}
		return inRanges(y.ranges, r)
	case x.kind == tokOne && y.kind == tokOne:
		return true
	case x.kind == tokOne: // a class
		return len(y.ranges) > 0
	}
	return rangesMeet(x.ranges, y.ranges)
}

// some reports whether some rune matches t (a star matches the empty run).
func some(t *tok) bool {
	return t.kind != tokClass || len(t.ranges) > 0
}

func inRanges(rs []rrange, r rune) bool {
	for _, x := range rs {
		if x.lo <= r && r <= x.hi {
			return true
		}
	}
	return false
}

func rangesMeet(a, b []rrange) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].hi < b[j].lo:
			i++
		case b[j].hi < a[i].lo:
			j++
		default:
			return true
		}
	}
	return false
}

// meter counts the cells a decision reaches (and one per pair of globs)
// and asks stop, every so often,
// whether to go on. Once it has run out (or stop said so) every decision
// answers "overlap": the claim then passes over the card, as it would a
// held one, and the caller learns why from the state's fault.
type meter struct {
	limit   int64 // the cells allowed; 0: no limit
	stop    func() bool
	n       int64
	stopped bool

	reach, cur, next []bool // the tables, kept between decisions
}

// tick counts n cells and reports whether the decision must give up.
func (m *meter) tick(n int64) bool {
	if m.stopped {
		return true
	}
	m.n += n
	if m.limit > 0 && m.n > m.limit {
		m.stopped = true
		return true
	}
	if m.stop != nil && m.n>>12 != (m.n-n)>>12 && m.stop() {
		m.stopped = true
	}
	return m.stopped
}

// patternsMeet reports whether one non-empty segment matches both token
// lists: reachability in their product, a row per token of x.
func patternsMeet(x, y []tok, m *meter) bool {
	if literal(x) && literal(y) {
		return slicesEqual(x, y)
	}
	lx, ly := len(x), len(y)
	m.cur, m.next = grow(m.cur, ly+1), grow(m.next, ly+1)
	cur, next := m.cur, m.next
	cur[0] = true
	for p := 0; p <= lx; p++ {
		clear(next)
		live := int64(0)
		for q := 0; q <= ly; q++ {
			if !cur[q] {
				continue
			}
			live++
			if p == lx && q == ly {
				return true
			}
			xs := p < lx && x[p].kind == tokStar
			ys := q < ly && y[q].kind == tokStar
			switch {
			case xs && ys:
				next[q], cur[q+1] = true, true
			case xs:
				next[q] = true // past the star
				if q < ly && some(&y[q]) {
					cur[q+1] = true // the star takes y's rune
				}
			case ys:
				cur[q+1] = true
				if p < lx && some(&x[p]) {
					next[q] = true
				}
			case p < lx && q < ly && meet(&x[p], &y[q]):
				next[q+1] = true
			}
		}
		if live == 0 {
			return false // no prefix of a segment matches both
		}
		if m.tick(live) {
			return true
		}
		cur, next = next, cur
	}
	return false
}

// listsMeet reports whether some path matches both segment lists: a table
// over (i, j), each cell decided once.
func listsMeet(a, b []segment, m *meter) bool {
	la, lb := len(a), len(b)
	m.reach = grow(m.reach, (la+1)*(lb+1))
	reach := m.reach
	at := func(i, j int) int { return i*(lb+1) + j }
	reach[0] = true
	for i := 0; i <= la; i++ {
		live := int64(0)
		for j := 0; j <= lb; j++ {
			if !reach[at(i, j)] {
				continue
			}
			live++
			if i == la && j == lb {
				return true
			}
			aa := i < la && a[i].any
			bb := j < lb && b[j].any
			switch {
			case aa || bb:
				// "**" stands for none of the other's segments, or
				// for the other's next one and maybe more.
				if aa {
					reach[at(i+1, j)] = true
					if j < lb {
						reach[at(i, j+1)] = true
					}
				}
				if bb {
					reach[at(i, j+1)] = true
					if i < la {
						reach[at(i+1, j)] = true
					}
				}
			case i < la && j < lb && patternsMeet(a[i].toks, b[j].toks, m):
				reach[at(i+1, j+1)] = true
			}
			if m.stopped {
				return true
			}
		}
		if live == 0 {
			return false // no path of i segments matches both
		}
		if m.tick(live) {
			return true
		}
	}
	return false
}

// grow returns buf cleared and n long, reusing its array when it can.
func grow(buf []bool, n int) []bool {
	if cap(buf) < n {
		return make([]bool, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// literal reports whether every token is a rune.
func literal(t []tok) bool {
	for i := range t {
		if t[i].kind != tokRune {
			return false
		}
	}
	return true
}

func slicesEqual(x, y []tok) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].r != y[i].r {
			return false
		}
	}
	return true
}
