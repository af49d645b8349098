package export

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// graph is the dependency DAG: one node per card plus one per dependency
// or link target that is not among the exported cards, and one edge per
// depends_on entry, pointing from the dependency to the card that waits
// for it, and per typed link, pointing from its other end to the card it
// is on.
type graph struct {
	nodes []node // natural id order
	edges []edge // sorted by (from, to, type)
}

// edge is a depends_on entry (typ "") or a typed link, as node indexes.
type edge struct {
	from, to int
	typ      string
}

// dashed reports whether an edge holds nothing back (discovered-from,
// related): the graphs draw it dashed.
func (e edge) dashed() bool { return e.typ != "" && !ledger.LinkHolds(e.typ) }

type node struct {
	id   string
	card *ledger.Card // nil for a dependency outside the export
}

func (n node) class() string {
	if n.card == nil {
		return classExternal
	}
	return styleClass(n.card.Status)
}

func buildGraph(cards []ledger.Card) graph {
	var g graph
	byID := index(cards)
	ids := make([]string, 0, len(cards))
	for _, c := range cards {
		ids = append(ids, c.ID)
		for _, d := range c.DependsOn {
			if byID[d] == nil {
				ids = append(ids, d)
			}
		}
		for _, l := range c.Links {
			if byID[l.To] == nil {
				ids = append(ids, l.To)
			}
		}
	}
	ids = uniq(ids)
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
		g.nodes = append(g.nodes, node{id: id, card: byID[id]})
	}
	for _, c := range cards {
		for _, d := range uniq(c.DependsOn) {
			if d == c.ID {
				continue
			}
			g.edges = append(g.edges, edge{pos[d], pos[c.ID], ""})
		}
		for _, l := range c.Links {
			if l.To != c.ID {
				g.edges = append(g.edges, edge{pos[l.To], pos[c.ID], l.Type})
			}
		}
	}
	slices.SortFunc(g.edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to), cmp.Compare(a.typ, b.typ))
	})
	g.edges = slices.Compact(g.edges)
	return g
}

// nodeLabel is the one-line text of a graph node: "ID: title", cut to fit.
func nodeLabel(n node, max int) string {
	if n.card == nil {
		return n.id + " (not exported)"
	}
	return truncate(oneLine(n.id+": "+n.card.Title), max)
}

// mermaidID turns a card id into a Mermaid node id: "c_" and the id with
// every byte outside [A-Za-z0-9] written as _XX (hex), so distinct ids
// stay distinct and none can be a Mermaid keyword.
func mermaidID(id string) string {
	var b strings.Builder
	b.WriteString("c_")
	for i := 0; i < len(id); i++ {
		c := id[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || isDigit(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02X", c)
	}
	return b.String()
}

// mermaidText escapes a label for a quoted Mermaid string: the characters
// Mermaid treats specially become entity codes (#34; for a quote), so no
// title can end the string or inject markup.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range oneLine(s) {
		switch r {
		case '"', '#', '&', '<', '>', '`', ';', '\\', '{', '}', '|':
			fmt.Fprintf(&b, "#%d;", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// labelWidth is how many columns a graph label may take.
const labelWidth = 48

// RenderMermaid writes the dependency DAG as a Mermaid flowchart, left to
// right, an edge from each dependency to the card that depends on it, nodes
// styled by status. Node and edge order is natural id order, so a change to
// one card changes only its own lines.
func RenderMermaid(cards []ledger.Card, o Options) []byte {
	var b strings.Builder
	writeMermaid(&b, buildGraph(sorted(cards)))
	return []byte(b.String())
}

func writeMermaid(b *strings.Builder, g graph) {
	b.WriteString("flowchart LR\n")
	for _, cl := range []string{string(ledger.StatusReady), string(ledger.StatusClaimed), string(ledger.StatusBlocked), string(ledger.StatusDone), classExternal} {
		p := palette[cl]
		fmt.Fprintf(b, "  classDef %s fill:%s,stroke:%s,color:%s", cl, p.fill, p.stroke, p.text)
		if cl == classExternal {
			b.WriteString(",stroke-dasharray:4 3")
		}
		b.WriteString("\n")
	}
	if len(g.nodes) == 0 {
		b.WriteString("  c_none[\"no cards\"]\n  class c_none external\n")
		return
	}
	for _, n := range g.nodes {
		id := mermaidID(n.id)
		fmt.Fprintf(b, "  %s[\"%s\"]\n", id, mermaidText(nodeLabel(n, labelWidth)))
		fmt.Fprintf(b, "  class %s %s\n", id, n.class())
	}
	for _, e := range g.edges {
		arrow := "-->"
		switch {
		case e.dashed():
			arrow = "-.->|" + e.typ + "|"
		case e.typ != "":
			arrow = "-->|" + e.typ + "|"
		}
		fmt.Fprintf(b, "  %s %s %s\n", mermaidID(g.nodes[e.from].id), arrow, mermaidID(g.nodes[e.to].id))
	}
}

// dotQuote writes s as a Graphviz quoted string: backslashes and quotes
// escaped, so label escapes like \N in a title stay literal.
func dotQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + s + `"`
}

// RenderDOT writes the dependency DAG for Graphviz (dot -Tsvg), the same
// graph as RenderMermaid.
func RenderDOT(cards []ledger.Card, o Options) []byte {
	cards = sorted(cards)
	g := buildGraph(cards)
	var b strings.Builder
	b.WriteString("digraph backlog {\n")
	fmt.Fprintf(&b, "  graph [rankdir=LR, label=%s, labelloc=t, fontname=\"Helvetica\"];\n", dotQuote(o.title()))
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("  edge [color=\"#6b7280\", arrowsize=0.7];\n")
	for _, n := range g.nodes {
		p := palette[n.class()]
		label, tooltip := n.id+" (not exported)", n.id
		style := ""
		if n.card != nil {
			title := oneLine(n.card.Title)
			// A Graphviz line break between the id and the title; the
			// title's own backslashes are escaped by dotQuote.
			label = n.id + "\x00" + truncate(title, labelWidth)
			tooltip = title
		} else {
			style = `, style="rounded,filled,dashed"`
		}
		q := strings.ReplaceAll(dotQuote(label), "\x00", `\n`)
		fmt.Fprintf(&b, "  %s [label=%s, tooltip=%s, fillcolor=%q, color=%q, fontcolor=%q%s];\n",
			dotQuote(n.id), q, dotQuote(tooltip), p.fill, p.stroke, p.text, style)
	}
	for _, e := range g.edges {
		attrs := ""
		switch {
		case e.dashed():
			attrs = fmt.Sprintf(" [style=dashed, label=%q]", e.typ)
		case e.typ != "":
			attrs = fmt.Sprintf(" [label=%q]", e.typ)
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(g.nodes[e.from].id), dotQuote(g.nodes[e.to].id), attrs)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}
