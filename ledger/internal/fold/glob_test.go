package fold

import (
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"testing"
)

// refMatch is the plain definition of a glob covering a file: segment by
// segment with path.Match, "**" trying every split. Exponential, for tiny
// inputs only.
func refMatch(glob, file string) bool {
	var match func(g, f []string) bool
	match = func(g, f []string) bool {
		switch {
		case len(g) == 0:
			return len(f) == 0
		case g[0] == "**":
			return match(g[1:], f) || (len(f) > 0 && match(g, f[1:]))
		case len(f) == 0:
			return false
		}
		ok, _ := path.Match(g[0], f[0])
		return ok && match(g[1:], f[1:])
	}
	return match(globSegs(glob), strings.Split(file, "/"))
}

// smallPaths is every path of 1 to 3 segments, each 1 or 2 runes of
// "abc": a witness for any two globs randomGlob makes, if they share one
// (two patterns of at most 2 tokens that share a segment share one of at
// most 2 runes).
func smallPaths() []string {
	var segs []string
	var grow func(s string)
	grow = func(s string) {
		if s != "" {
			segs = append(segs, s)
		}
		if len(s) < 2 {
			for _, r := range "abc" {
				grow(s + string(r))
			}
		}
	}
	grow("")
	var out []string
	var build func(p string, n int)
	build = func(p string, n int) {
		if n == 0 {
			return
		}
		for _, s := range segs {
			q := s
			if p != "" {
				q = p + "/" + s
			}
			out = append(out, q)
			build(q, n-1)
		}
	}
	build("", 3)
	return out
}

// randomGlob is a glob of at most 2 segments of at most 2 tokens over a
// small alphabet, so smallPaths holds a witness of any overlap.
func randomGlob(r *rand.Rand) string {
	toks := []string{"a", "b", "*", "?", "[ab]", "[^a]", "[b-c]", "**"}
	n := 1 + r.IntN(2)
	segs := make([]string, n)
	for i := range segs {
		var b strings.Builder
		for range 1 + r.IntN(2) {
			t := toks[r.IntN(len(toks))]
			if t == "**" && b.Len() == 0 && r.IntN(2) == 0 {
				b.WriteString("**")
				break
			}
			if t == "**" {
				t = "*"
			}
			b.WriteString(t)
		}
		segs[i] = b.String()
	}
	return strings.Join(segs, "/")
}

// TestPathsOverlapAgainstBruteForce: on small globs over a small alphabet
// the decision is exact, against every path that could witness it; and
// PathMatches agrees with path.Match segment by segment.
func TestPathsOverlapAgainstBruteForce(t *testing.T) {
	paths := smallPaths()
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if os.Getenv("BL_STRESS") != "" {
		n = 20000
	}
	for range n {
		a, b := randomGlob(r), randomGlob(r)
		want := false
		for i, p := range paths {
			ma := refMatch(a, p)
			if i%7 == 0 {
				if got := PathMatches(a, p); got != ma {
					t.Fatalf("PathMatches(%q, %q) = %v, path.Match says %v", a, p, got, ma)
				}
			}
			if ma && refMatch(b, p) {
				want = true
				break
			}
		}
		if got := PathsOverlap(a, b); got != want {
			t.Fatalf("PathsOverlap(%q, %q) = %v, brute force says %v", a, b, got, want)
		}
	}
}

// FuzzPathsOverlap: never "no overlap" for two globs a path matches both
// of (the path is the fuzzer's), and the decision is symmetric.
func FuzzPathsOverlap(f *testing.F) {
	f.Add("src/[ab]*", "src/b?", "src/ba")
	f.Add("**/*.go", "a/**/b*", "a/x/b.go")
	f.Add("x/**/**/**/y", "x/**/y/**", "x/y")
	f.Fuzz(func(t *testing.T, a, b, p string) {
		if ValidPath(a) != nil || ValidPath(b) != nil || ValidPath(p) != nil || len(a)+len(b) > 200 {
			return
		}
		ab, ba := PathsOverlap(a, b), PathsOverlap(b, a)
		if ab != ba {
			t.Fatalf("PathsOverlap(%q, %q) = %v but reversed %v", a, b, ab, ba)
		}
		if refMatch(a, p) && refMatch(b, p) && !ab {
			t.Fatalf("PathsOverlap(%q, %q) = false, but %q matches both", a, b, p)
		}
		if PathMatches(a, p) != refMatch(a, p) {
			t.Fatalf("PathMatches(%q, %q) = %v, path.Match says otherwise", a, p, !refMatch(a, p))
		}
	})
}

// hostile is the worst pair a 512-byte limit allows for the old recursion:
// k "**" segments each, no common path.
func hostile(k int) (string, string) {
	return strings.Repeat("**/x", k) + "/*.a", strings.Repeat("**/x", k) + "/*.b"
}

// TestHostileGlobsDecide: the pairs that took the old recursion minutes
// (k = 16 took 524 s) are decided, and rightly, in a bounded number of
// table cells that does not depend on the machine.
func TestHostileGlobsDecide(t *testing.T) {
	for _, k := range []int{16, 64, 127} {
		a, b := hostile(k)
		m := &meter{}
		if listsMeet(parseGlob(a), parseGlob(b), m) {
			t.Fatalf("k=%d: overlap reported for *.a and *.b", k)
		}
		segs := int64(2*k + 2)
		if bound := (segs + 1) * (segs + 1) * 4; m.n > bound {
			t.Fatalf("k=%d: %d cells visited, more than %d", k, m.n, bound)
		}
	}
	x, y := strings.Repeat("*a", 255), strings.Repeat("*b", 255)+"*"
	m := &meter{}
	if !patternsMeet(parsePattern(x), parsePattern(y), m) || m.n > 600*600 {
		t.Fatalf("star patterns: %d cells", m.n)
	}
}

// TestMeterGivesUpAsOverlap: a decision that runs out of cells, or is
// stopped, answers overlap (the conservative side).
func TestMeterGivesUpAsOverlap(t *testing.T) {
	a, b := hostile(100)
	if !listsMeet(parseGlob(a), parseGlob(b), &meter{limit: 10}) {
		t.Fatal("a meter that ran out answered no overlap")
	}
	if !listsMeet(parseGlob(a), parseGlob(b), &meter{stop: func() bool { return true }}) {
		t.Fatal("a stopped meter answered no overlap")
	}
}

func TestRepeatedStarsCollapse(t *testing.T) {
	if got := len(parseGlob("a/**/**/**/b")); got != 4 { // a ** b **
		t.Fatalf("segments = %d", got)
	}
	if got := len(parsePattern("a***b")); got != 3 {
		t.Fatalf("tokens = %d", got)
	}
}

// worst512 is the worst pair of the 512-byte limit: 128 segments each,
// 127 of them "**".
func worst512() (string, string) {
	return hostile(127)
}

func BenchmarkPathsOverlapWorst512(b *testing.B) {
	x, y := worst512()
	if len(x) != MaxPathLen || len(y) != MaxPathLen {
		b.Fatalf("len %d", len(x))
	}
	for b.Loop() {
		PathsOverlap(x, y)
	}
}

func BenchmarkPathsOverlapStars512(b *testing.B) {
	x, y := strings.Repeat("*a", 256), strings.Repeat("*b", 256)
	for b.Loop() {
		PathsOverlap(x, y)
	}
}
