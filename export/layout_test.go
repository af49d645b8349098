package export

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

func checkLayout(t *testing.T, g graph, l layout) {
	t.Helper()
	for _, e := range g.edges {
		a, b := l.boxes[e.from], l.boxes[e.to]
		if b.x <= a.x {
			t.Errorf("edge %s → %s does not point right (%d → %d)", g.nodes[e.from].id, g.nodes[e.to].id, a.x, b.x)
		}
	}
	// Boxes in one column never overlap and all lie inside the drawing.
	cols := map[int][]rect{}
	for i, r := range l.boxes {
		if r.x < 0 || r.y < 0 || r.x+r.w > l.width || r.y+r.h > l.height {
			t.Errorf("box of %s %+v is outside %dx%d", g.nodes[i].id, r, l.width, l.height)
		}
		cols[r.x] = append(cols[r.x], r)
	}
	for _, col := range cols {
		slices.SortFunc(col, func(a, b rect) int { return a.y - b.y })
		for i := 1; i < len(col); i++ {
			if col[i].y < col[i-1].y+col[i-1].h+rowGap/2 {
				t.Errorf("boxes overlap: %+v and %+v", col[i-1], col[i])
			}
		}
	}
	for i, p := range l.paths {
		if !strings.HasPrefix(p, "M") {
			t.Errorf("edge %d path %q", i, p)
		}
	}
}

func TestLayoutLongestPathLayers(t *testing.T) {
	// A1 → A2 → A3 and A1 → A3: A3 sits two columns right of A1, and the
	// long edge A1 → A3 is routed through a dummy (a straight segment).
	cards := []ledger.Card{
		card("A1", "a", ledger.StatusDone, 0, 0),
		card("A2", "b", ledger.StatusReady, 0, 1),
		card("A3", "c", ledger.StatusReady, 0, 2),
	}
	cards[1].DependsOn = []string{"A1"}
	cards[2].DependsOn = []string{"A1", "A2"}
	g := buildGraph(cards)
	l := layoutGraph(g)
	checkLayout(t, g, l)
	col := func(i int) int { return (l.boxes[i].x - margin) / (nodeW + colGap) }
	if col(0) != 0 || col(1) != 1 || col(2) != 2 {
		t.Errorf("columns %d %d %d, want 0 1 2", col(0), col(1), col(2))
	}
	var long string
	for i, e := range g.edges {
		if e.from == 0 && e.to == 2 {
			long = l.paths[i]
		}
	}
	if !strings.Contains(long, " L") {
		t.Errorf("long edge A1 → A3 is not routed through a dummy: %s", long)
	}
}

func TestLayoutReducesCrossings(t *testing.T) {
	// Two independent chains given in an interleaved id order: the drawing
	// should have no crossings.
	cards := []ledger.Card{
		card("a1", "", ledger.StatusReady, 0, 0), card("b1", "", ledger.StatusReady, 0, 0),
		card("c2", "", ledger.StatusReady, 0, 0), card("d2", "", ledger.StatusReady, 0, 0),
	}
	cards[2].DependsOn = []string{"b1"} // c2 ← b1
	cards[3].DependsOn = []string{"a1"} // d2 ← a1
	g := buildGraph(cards)
	l := layoutGraph(g)
	checkLayout(t, g, l)
	ya, yb := l.boxes[0].y, l.boxes[1].y
	yc, yd := l.boxes[2].y, l.boxes[3].y
	if (ya < yb) != (yd < yc) {
		t.Errorf("chains cross: a1 %d b1 %d, d2 %d c2 %d", ya, yb, yd, yc)
	}
}

func TestLayoutBigAndCyclic(t *testing.T) {
	cards := bigCards(1000)
	g := buildGraph(cards)
	l := layoutGraph(g)
	t.Logf("1000 cards, %d edges: drawing %dx%d", len(g.edges), l.width, l.height)
	checkLayout(t, g, l)

	// Input with cycles (never written by bl, but Render takes any cards)
	// still draws, with every node placed.
	r := rand.New(rand.NewPCG(5, 6))
	var cyc []ledger.Card
	for i := range 60 {
		c := card(fmt.Sprintf("k%d", i), "cycle", ledger.StatusReady, 0, i)
		for range 2 {
			c.DependsOn = append(c.DependsOn, fmt.Sprintf("k%d", r.IntN(60)))
		}
		cyc = append(cyc, c)
	}
	g = buildGraph(cyc)
	l = layoutGraph(g)
	if len(l.boxes) != 60 || len(l.paths) != len(g.edges) {
		t.Fatalf("cyclic layout: %d boxes, %d paths", len(l.boxes), len(l.paths))
	}
	if out := string(render(t, HTML, cyc, Options{})); !strings.Contains(out, "</svg>") {
		t.Error("cyclic html has no svg")
	}
}

func TestDiff(t *testing.T) {
	if d := Diff("a", "x\n", "b", "x\n", 3, 50); d != "" {
		t.Errorf("equal texts diff: %q", d)
	}
	old := "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	neu := "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\n"
	want := `--- BACKLOG.md
+++ bl export
@@ -2,3 +2,3 @@
 two
-three
+THREE
 four
@@ -7 +7,2 @@
 seven
+eight
`
	if got := Diff("BACKLOG.md", old, "bl export", neu, 1, 50); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	got := Diff("a", old, "b", neu, 1, 4)
	if !strings.HasSuffix(got, "… 4 more diff lines\n") {
		t.Errorf("truncated diff:\n%s", got)
	}
	if got := Diff("a", "x", "b", "y", 1, 50); !strings.Contains(got, "-x\n\\ No newline at end of file\n+y\n") {
		t.Errorf("no-newline diff:\n%s", got)
	}
}

// TestDiffReconstructs: with enough context to make one hunk, the diff's
// old side is the old text and its new side the new text.
func TestDiffReconstructs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	words := []string{"a\n", "b\n", "c\n", "d\n", "e\n"}
	gen := func() string {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	for range 500 {
		a, b := gen(), gen()
		d := Diff("a", a, "b", b, 1000, 0)
		if a == b {
			continue
		}
		var oldSide, newSide strings.Builder
		for _, l := range splitLines(d)[3:] {
			switch l[0] {
			case ' ':
				oldSide.WriteString(l[1:])
				newSide.WriteString(l[1:])
			case '-':
				oldSide.WriteString(l[1:])
			case '+':
				newSide.WriteString(l[1:])
			}
		}
		if oldSide.String() != a || newSide.String() != b {
			t.Fatalf("diff does not reconstruct:\nold %q\nnew %q\n%s", a, b, d)
		}
	}
}
