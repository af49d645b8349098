package export

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// mermaidDoc is what parseMermaid understood.
type mermaidDoc struct {
	nodes   map[string]string // id → decoded label
	classOf map[string]string // id → class
	classes map[string]bool
	edges   [][2]string
}

var (
	mmIdent    = `[A-Za-z_][A-Za-z0-9_]*`
	mmClassDef = regexp.MustCompile(`^  classDef (` + mmIdent + `) ([a-z-]+:[^,;]+(?:,[a-z-]+:[^,;]+)*)$`)
	mmNode     = regexp.MustCompile(`^  (` + mmIdent + `)\["([^"]*)"\]$`)
	mmClass    = regexp.MustCompile(`^  class (` + mmIdent + `(?:,` + mmIdent + `)*) (` + mmIdent + `)$`)
	mmEdge     = regexp.MustCompile(`^  (` + mmIdent + `) --> (` + mmIdent + `)$`)
	mmEntity   = regexp.MustCompile(`#([0-9]+);`)
	// Words Mermaid's flowchart grammar reserves; a node id must not be one.
	mmKeywords = map[string]bool{"end": true, "graph": true, "flowchart": true, "subgraph": true, "class": true,
		"classDef": true, "style": true, "linkStyle": true, "click": true, "call": true, "href": true, "direction": true}
)

// parseMermaid checks text against the subset of Mermaid RenderMermaid
// writes — a `flowchart LR` header, then classDef, node, class and edge
// lines — and fails the test on anything else: an unsafe id, a label that
// could end its string or carry markup, an edge or class naming an
// undefined node or class.
func parseMermaid(t *testing.T, text string) mermaidDoc {
	t.Helper()
	d := mermaidDoc{nodes: map[string]string{}, classOf: map[string]string{}, classes: map[string]bool{}}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("mermaid does not end in a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if lines[0] != "flowchart LR" {
		t.Fatalf("mermaid line 1 = %q, want flowchart LR", lines[0])
	}
	checkID := func(n int, id string) {
		if mmKeywords[id] || mmKeywords[strings.ToLower(id)] || strings.HasPrefix(id, "o") || strings.HasPrefix(id, "x") {
			t.Errorf("mermaid line %d: node id %q is a keyword or starts like an edge end", n, id)
		}
	}
	for i, l := range lines[1:] {
		n := i + 2
		switch {
		case mmClassDef.MatchString(l):
			m := mmClassDef.FindStringSubmatch(l)
			d.classes[m[1]] = true
		case mmNode.MatchString(l):
			m := mmNode.FindStringSubmatch(l)
			checkID(n, m[1])
			if _, dup := d.nodes[m[1]]; dup {
				t.Errorf("mermaid line %d: node %s defined twice", n, m[1])
			}
			raw := m[2]
			rest := mmEntity.ReplaceAllString(raw, "")
			if strings.ContainsAny(rest, "\"#&<>`;\\{}|\r\n\t") {
				t.Errorf("mermaid line %d: label %q holds a raw special character", n, raw)
			}
			label := mmEntity.ReplaceAllStringFunc(raw, func(e string) string {
				code, _ := strconv.Atoi(mmEntity.FindStringSubmatch(e)[1])
				return string(rune(code))
			})
			d.nodes[m[1]] = label
		case mmClass.MatchString(l):
			m := mmClass.FindStringSubmatch(l)
			if !d.classes[m[2]] {
				t.Errorf("mermaid line %d: class %s is not defined", n, m[2])
			}
			for _, id := range strings.Split(m[1], ",") {
				if _, ok := d.nodes[id]; !ok {
					t.Errorf("mermaid line %d: class for undefined node %s", n, id)
				}
				d.classOf[id] = m[2]
			}
		case mmEdge.MatchString(l):
			m := mmEdge.FindStringSubmatch(l)
			for _, id := range m[1:] {
				if _, ok := d.nodes[id]; !ok {
					t.Errorf("mermaid line %d: edge to undefined node %s", n, id)
				}
			}
			d.edges = append(d.edges, [2]string{m[1], m[2]})
		default:
			t.Errorf("mermaid line %d is not in the emitted subset: %q", n, l)
		}
	}
	return d
}

func TestMermaidSyntax(t *testing.T) {
	cards := richCards()
	d := parseMermaid(t, string(render(t, Mermaid, cards, Options{})))
	byID := index(cards)
	for _, c := range cards {
		id := mermaidID(c.ID)
		if got, want := d.nodes[id], truncate(oneLine(c.ID+": "+c.Title), labelWidth); got != want {
			t.Errorf("label of %s = %q, want %q", c.ID, got, want)
		}
		if d.classOf[id] != string(c.Status) {
			t.Errorf("class of %s = %q, want %s", c.ID, d.classOf[id], c.Status)
		}
	}
	if d.classOf["c_Z9"] != "external" {
		t.Errorf("the dependency outside the export is not an external node")
	}
	// Edges run dependency → dependent, one per depends_on entry.
	want := 0
	for _, c := range cards {
		want += len(c.DependsOn)
		for _, dep := range c.DependsOn {
			found := false
			for _, e := range d.edges {
				found = found || (e == [2]string{mermaidID(dep), mermaidID(c.ID)})
			}
			if !found {
				t.Errorf("no edge %s --> %s", dep, c.ID)
			}
		}
	}
	if len(d.edges) != want {
		t.Errorf("%d edges, want %d", len(d.edges), want)
	}
	_ = byID

	// The board embeds the same graph.
	md := string(render(t, Markdown, cards, Options{Graph: true}))
	start := strings.Index(md, "```mermaid\n")
	end := strings.Index(md[start+11:], "```\n")
	if start < 0 || end < 0 {
		t.Fatal("markdown --graph has no mermaid block")
	}
	if block := md[start+11 : start+11+end]; block != string(render(t, Mermaid, cards, Options{})) {
		t.Errorf("embedded mermaid differs from the mermaid export")
	}
	parseMermaid(t, string(render(t, Mermaid, nil, Options{})))
}

// TestMermaidHostileTitles: whatever a title holds, the output parses and
// the label decodes back to the title.
func TestMermaidHostileTitles(t *testing.T) {
	alphabet := []rune("ab \"'#&;<>`\\{}|[]()-->%%:=\n\t\r*_~日🚀é")
	r := rand.New(rand.NewPCG(3, 4))
	var cards []ledger.Card
	for i := range 300 {
		var title []rune
		for range 1 + r.IntN(30) {
			title = append(title, alphabet[r.IntN(len(alphabet))])
		}
		id := fmt.Sprintf("h%d", i)
		switch i % 5 { // ids that are Mermaid keywords or look like edges
		case 0:
			id = []string{"end", "graph", "o", "x", "class", "style", "subgraph", "click"}[i/5%8] + fmt.Sprint(i)
		case 1:
			id = fmt.Sprintf("a-%d.b_c", i)
		}
		c := card(id, string(title), ledger.StatusReady, 0, i)
		if i > 0 {
			c.DependsOn = []string{cards[r.IntN(len(cards))].ID}
		}
		cards = append(cards, c)
	}
	cards = append(cards, card("end", "end", ledger.StatusDone, 0, 999), card("o", "o", ledger.StatusDone, 0, 999))
	d := parseMermaid(t, string(render(t, Mermaid, cards, Options{})))
	if len(d.nodes) != len(cards) {
		t.Fatalf("%d nodes for %d cards", len(d.nodes), len(cards))
	}
	for _, c := range cards {
		if got, want := d.nodes[mermaidID(c.ID)], truncate(oneLine(c.ID+": "+c.Title), labelWidth); got != want {
			t.Errorf("label of %s = %q, want %q", c.ID, got, want)
		}
	}
}

func TestMermaidIDsAreInjective(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"a.b", "a-b", "a_b", "a_2Eb", "a_2E", "A", "a", "a__b", "a_5Fb"} {
		m := mermaidID(id)
		if prev, dup := seen[m]; dup {
			t.Errorf("%q and %q both map to %q", prev, id, m)
		}
		seen[m] = id
	}
}
