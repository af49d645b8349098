package export

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/bl-backlog/bl/ledger"
)

// Format names an export format.
type Format string

// The formats.
const (
	Markdown Format = "markdown"
	Mermaid  Format = "mermaid"
	DOT      Format = "dot"
	CSV      Format = "csv"
	JSON     Format = "json"
	JSONL    Format = "jsonl"
	HTML     Format = "html"
)

// formatSpec is everything bl knows about one format, in one place: the
// names ParseFormat accepts, the file extensions FormatForPath maps to it,
// its renderer, whether its bytes depend on the clock, and its line in
// help texts.
type formatSpec struct {
	format        Format
	aliases       []string // other names ParseFormat accepts
	exts          []string // file extensions, lower case, with the dot
	render        func(cards []ledger.Card, o Options) ([]byte, error)
	timeDependent bool   // the bytes depend on Options.Now
	help          string // what it holds, for bl export --help
}

// formats is every format, in the order help texts show them. A new
// format is one entry here.
var formats = []formatSpec{
	{Markdown, []string{"md"}, []string{".md", ".markdown"}, pure(RenderMarkdown), false,
		"a board for pull requests: lanes by status, grouped by phase,\nclaim order, leases with absolute expiry, blocked reasons,\nacceptance checklists, dependency links"},
	{Mermaid, []string{"mmd"}, []string{".mmd", ".mermaid"}, pure(RenderMermaid), false,
		"the dependency DAG as a Mermaid flowchart"},
	{DOT, []string{"gv", "graphviz"}, []string{".dot", ".gv"}, pure(RenderDOT), false,
		"the same DAG for Graphviz (dot -Tsvg)"},
	{CSV, nil, []string{".csv"}, pure(RenderCSV), false,
		"RFC 4180, one row per card, list entries one per line"},
	{JSON, nil, []string{".json"}, RenderJSON, false,
		"an array of cards"},
	{JSONL, nil, []string{".jsonl", ".ndjson"}, RenderJSONL, false,
		"one card per line"},
	// Only html's "as of" line and expired-lease badges read the clock.
	{HTML, nil, []string{".html", ".htm"}, pure(RenderHTML), true,
		"one offline page: the DAG as SVG and the board"},
	{Beads, nil, nil, RenderBeads, false,
		"beads' issues.jsonl, the way back from bl import --from beads"},
}

// pure adapts a renderer that cannot fail.
func pure(render func([]ledger.Card, Options) []byte) func([]ledger.Card, Options) ([]byte, error) {
	return func(cards []ledger.Card, o Options) ([]byte, error) { return render(cards, o), nil }
}

// spec returns f's entry in formats.
func (f Format) spec() (*formatSpec, bool) {
	for i := range formats {
		if formats[i].format == f {
			return &formats[i], true
		}
	}
	return nil, false
}

// Formats lists every format, in the order help texts show them.
func Formats() []Format {
	out := make([]Format, len(formats))
	for i, s := range formats {
		out[i] = s.format
	}
	return out
}

// ParseFormat reads a format name, or one of its aliases: "md" for
// markdown, "mmd" for mermaid, "gv" and "graphviz" for dot.
func ParseFormat(s string) (Format, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, sp := range formats {
		if string(sp.format) == name || slices.Contains(sp.aliases, name) {
			return sp.format, nil
		}
	}
	return "", fmt.Errorf("unknown format %q: use %s", s, formatList())
}

func formatList() string {
	var names []string
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// FormatForPath guesses the format from a file name's extension: .md,
// .mmd/.mermaid, .dot/.gv, .csv, .json, .jsonl/.ndjson, .html/.htm. ok is
// false when the extension says nothing.
func FormatForPath(path string) (f Format, ok bool) {
	ext := strings.ToLower(filepath.Ext(path))
	for _, sp := range formats {
		if slices.Contains(sp.exts, ext) {
			return sp.format, true
		}
	}
	return "", false
}

// TimeDependent reports whether the format's bytes depend on Options.Now as
// well as on the cards. Only html does (its "as of" line and expired-lease
// badges), so only html cannot be checked for staleness.
func (f Format) TimeDependent() bool {
	sp, ok := f.spec()
	return ok && sp.timeDependent
}

// FormatsHelp describes every format, one entry per format, for a command's
// help: the name in a column, then what it holds, each line indented by
// indent.
func FormatsHelp(indent string) string {
	var b strings.Builder
	for _, sp := range formats {
		for i, line := range strings.Split(sp.help, "\n") {
			name := ""
			if i == 0 {
				name = string(sp.format)
			}
			fmt.Fprintf(&b, "%s%-9s %s\n", indent, name, line)
		}
	}
	return b.String()
}

// Options shape an export. The zero value is a full board titled "Backlog".
type Options struct {
	// Title heads the markdown and html boards. Default "Backlog".
	Title string
	// Statuses are the lanes the boards show, in lifecycle order whatever
	// the order here. Empty means all four lanes. Cards whose status is
	// not listed are still rendered in the formats without lanes.
	Statuses []ledger.Status
	// Graph embeds the dependency graph in the markdown board as a Mermaid
	// block.
	Graph bool
	// Command is the command line that makes this export, quoted in the
	// markdown header and the html footer so readers know how to
	// regenerate it. Default "bl export --format FORMAT" (and --graph).
	Command string
	// Now is the moment the html board is "as of"; claimed cards whose
	// lease ran out by then are marked expired there. The text formats
	// never use it, so they only change when the backlog does. The zero
	// time leaves the html without both.
	Now time.Time
	// WaitingOn lists, for a ready card, its dependencies that are not
	// done, as the backlog holds them: the boards mark such a card
	// waiting rather than claimable. (The cards given may be filtered, so
	// the renderers cannot tell this from them.) It does not depend on
	// the clock, so a checked board stays stable.
	WaitingOn map[string][]string
	// Conflicts are the events the fold refused (State.Conflicts), shown
	// on the markdown and html boards under the cards they are about.
	Conflicts []ledger.Conflict
}

func (o Options) title() string {
	if t := oneLine(o.Title); t != "" {
		return t
	}
	return "Backlog"
}

func (o Options) command(f Format) string {
	if c := oneLine(o.Command); c != "" {
		return c
	}
	c := "bl export --format " + string(f)
	if o.Graph && f == Markdown {
		c += " --graph"
	}
	return c
}

// lanes returns the statuses the boards show, in lifecycle order.
func (o Options) lanes() []ledger.Status {
	all := ledger.Statuses
	if len(o.Statuses) == 0 {
		return all
	}
	var out []ledger.Status
	for _, s := range all {
		if slices.Contains(o.Statuses, s) {
			out = append(out, s)
		}
	}
	return out
}

// Render writes cards in format f to w. The result depends only on the set
// of cards and on o, never on the order of cards or on the clock.
func Render(w io.Writer, f Format, cards []ledger.Card, o Options) error {
	sp, ok := f.spec()
	if !ok {
		return fmt.Errorf("unknown format %q: use %s", f, formatList())
	}
	b, err := sp.render(cards, o)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Bytes is Render into a byte slice.
func Bytes(f Format, cards []ledger.Card, o Options) ([]byte, error) {
	var buf bytes.Buffer
	err := Render(&buf, f, cards, o)
	return buf.Bytes(), err
}

// sorted returns copies of the cards in claim order, with nil lists made
// empty, so renderers see one canonical input.
func sorted(cards []ledger.Card) []ledger.Card {
	out := make([]ledger.Card, len(cards))
	copy(out, cards)
	for i := range out {
		c := &out[i]
		c.Labels = nonNil(c.Labels)
		c.DependsOn = nonNil(c.DependsOn)
		c.Acceptance = nonNil(c.Acceptance)
	}
	slices.SortStableFunc(out, func(a, b ledger.Card) int { return ledger.ClaimOrder(&a, &b) })
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// index maps ids to the cards' positions.
func index(cards []ledger.Card) map[string]*ledger.Card {
	m := make(map[string]*ledger.Card, len(cards))
	for i := range cards {
		m[cards[i].ID] = &cards[i]
	}
	return m
}

// dependents maps each id to the ids of the cards that depend on it, in
// natural id order.
func dependents(cards []ledger.Card) map[string][]string {
	m := map[string][]string{}
	for _, c := range cards {
		for _, d := range uniq(c.DependsOn) {
			m[d] = append(m[d], c.ID)
		}
	}
	for k := range m {
		slices.SortFunc(m[k], naturalCompare)
	}
	return m
}

// uniq returns s without repeats, in natural order.
func uniq(s []string) []string {
	out := slices.Clone(s)
	slices.SortFunc(out, naturalCompare)
	return slices.Compact(out)
}

// phaseGroups splits cards (already in claim order) by phase: named phases
// in natural order, then the cards without a phase.
func phaseGroups(cards []ledger.Card) (phases []string, byPhase map[string][]ledger.Card) {
	byPhase = map[string][]ledger.Card{}
	for _, c := range cards {
		if _, seen := byPhase[c.Phase]; !seen {
			phases = append(phases, c.Phase)
		}
		byPhase[c.Phase] = append(byPhase[c.Phase], c)
	}
	slices.SortFunc(phases, comparePhase)
	return phases, byPhase
}

// comparePhase orders phases naturally, the empty phase last.
func comparePhase(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	return naturalCompare(a, b)
}

// naturalCompare orders strings with digit runs compared as numbers, so M2
// comes before M10; ties fall back to plain byte order.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if ca != cb {
			return cmp.Compare(ca, cb)
		}
		i++
		j++
	}
	if c := cmp.Compare(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// oneLine is OneLine (text.go): whitespace folded, control characters
// dropped, so a title always fits on one line.
func oneLine(s string) string { return OneLine(s) }

// truncate shortens s to at most max display columns (wide characters count
// two), ending in "…" when it cut something.
func truncate(s string, max int) string {
	if width(s) <= max {
		return s
	}
	var b strings.Builder
	w := 0
	for _, r := range s {
		rw := runeWidth(r)
		if w+rw > max-1 {
			break
		}
		b.WriteRune(r)
		w += rw
	}
	return strings.TrimRight(b.String(), " ") + "…"
}

func width(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

// runeWidth approximates how many columns r takes: two for East Asian wide
// characters and emoji, zero for combining marks, else one.
func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || r == 0x200d || (r >= 0xfe00 && r <= 0xfe0f):
		return 0
	case r >= 0x1100 && (r <= 0x115f || r == 0x2329 || r == 0x232a ||
		(r >= 0x2e80 && r <= 0xa4cf && r != 0x303f) || (r >= 0xac00 && r <= 0xd7a3) ||
		(r >= 0xf900 && r <= 0xfaff) || (r >= 0xfe30 && r <= 0xfe6f) || (r >= 0xff00 && r <= 0xff60) ||
		(r >= 0xffe0 && r <= 0xffe6) || (r >= 0x1f300 && r <= 0x1faff) || (r >= 0x20000 && r <= 0x3fffd)):
		return 2
	}
	return 1
}

// stamp is a time in UTC, RFC 3339 to the second.
func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// statusCounts counts cards per status.
func statusCounts(cards []ledger.Card) map[ledger.Status]int {
	m := map[ledger.Status]int{}
	for _, c := range cards {
		m[c.Status]++
	}
	return m
}

// laneTitle is a status as a lane heading.
func laneTitle(s ledger.Status) string {
	switch s {
	case ledger.StatusReady:
		return "Ready"
	case ledger.StatusClaimed:
		return "Claimed"
	case ledger.StatusReview:
		return "Review"
	case ledger.StatusBlocked:
		return "Blocked"
	case ledger.StatusDone:
		return "Done"
	}
	return string(s)
}

// palette is the status colours shared by every graphical format.
type colours struct{ fill, stroke, text string }

var palette = map[string]colours{
	string(ledger.StatusReady):   {"#dbeafe", "#2563eb", "#1e3a8a"},
	string(ledger.StatusClaimed): {"#fef3c7", "#d97706", "#78350f"},
	string(ledger.StatusReview):  {"#ede9fe", "#7c3aed", "#4c1d95"},
	string(ledger.StatusBlocked): {"#fee2e2", "#dc2626", "#7f1d1d"},
	string(ledger.StatusDone):    {"#dcfce7", "#16a34a", "#14532d"},
	classExternal:                {"#f3f4f6", "#9ca3af", "#4b5563"},
}

// classExternal styles graph nodes for dependencies outside the export.
const classExternal = "external"

func styleClass(s ledger.Status) string {
	if _, ok := palette[string(s)]; ok {
		return string(s)
	}
	return classExternal
}
