package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var extensions = map[Format]string{
	Markdown: "md", Mermaid: "mmd", DOT: "dot", CSV: "csv", JSON: "json", JSONL: "jsonl", HTML: "html", Beads: "beads.jsonl",
}

type goldenCase struct {
	name  string
	cards []ledger.Card
	opts  Options
	forms []Format
}

func goldenCases() []goldenCase {
	htmlOpts := Options{Now: testNow}
	return []goldenCase{
		{"rich", richCards(), htmlOpts, Formats()},
		{"rich-graph", richCards(), Options{Graph: true, Title: "Sprint 12 | team <b>"}, []Format{Markdown}},
		{"rich-ready-blocked", richCards(), Options{Statuses: []ledger.Status{ledger.StatusBlocked, ledger.StatusReady}}, []Format{Markdown, HTML}},
		{"sparse", sparseCards(), htmlOpts, []Format{Markdown, Mermaid}},
		{"empty", nil, htmlOpts, Formats()},
	}
}

func render(t *testing.T, f Format, cards []ledger.Card, o Options) []byte {
	t.Helper()
	b, err := Bytes(f, cards, o)
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return b
}

// TestGolden compares every format with testdata/NAME.EXT. Run
// `go test ./export -update` to rewrite them after an intended change,
// and review the diff.
func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		for _, f := range tc.forms {
			t.Run(tc.name+"."+extensions[f], func(t *testing.T) {
				got := render(t, f, tc.cards, tc.opts)
				path := filepath.Join("testdata", tc.name+"."+extensions[f])
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./export -update to create it)", err)
				}
				if d := Diff(path, string(want), "got", string(got), 3, 80); d != "" {
					t.Errorf("%s is out of date (go test ./export -update rewrites it):\n%s", path, d)
				}
			})
		}
	}
}

// TestBigGolden checks a 1000-card backlog by hash (testdata/big1000.sha256,
// rewritten by -update) and by properties.
func TestBigGolden(t *testing.T) {
	cards := bigCards(1000)
	o := Options{Now: testNow, Graph: true}
	var sums strings.Builder
	outs := map[Format][]byte{}
	for _, f := range Formats() {
		b := render(t, f, cards, o)
		outs[f] = b
		fmt.Fprintf(&sums, "%x  big1000.%s\n", sha256.Sum256(b), extensions[f])
	}
	path := filepath.Join("testdata", "big1000.sha256")
	if *update {
		if err := os.WriteFile(path, []byte(sums.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(path); err != nil {
		t.Fatalf("%v (run go test ./export -update to create it)", err)
	} else if d := Diff(path, string(want), "got", sums.String(), 0, 20); d != "" {
		t.Errorf("1000-card exports changed (go test ./export -update rewrites the hashes):\n%s", d)
	}

	md := string(outs[Markdown])
	for _, c := range cards {
		if !strings.Contains(md, `<a id="card-`+strings.ToLower(c.ID)+`"></a>`) {
			t.Fatalf("markdown has no anchor for %s", c.ID)
		}
	}
	if n := strings.Count(md, "\n#### "); n != 1000 {
		t.Errorf("markdown has %d card headings, want 1000", n)
	}
	recs, err := csv.NewReader(bytes.NewReader(outs[CSV])).ReadAll()
	if err != nil || len(recs) != 1001 {
		t.Errorf("csv: %d records, err %v; want 1001", len(recs), err)
	}
	var back []ledger.Card
	if err := json.Unmarshal(outs[JSON], &back); err != nil || len(back) != 1000 {
		t.Errorf("json: %d cards, err %v", len(back), err)
	}
	if n := bytes.Count(outs[JSONL], []byte("\n")); n != 1000 {
		t.Errorf("jsonl: %d lines", n)
	}
	d := parseMermaid(t, string(outs[Mermaid]))
	if len(d.nodes) != 1000 {
		t.Errorf("mermaid: %d nodes", len(d.nodes))
	}
	if n := strings.Count(string(outs[HTML]), `<g class="node `); n != 1000 {
		t.Errorf("html: %d svg nodes", n)
	}
	if n := strings.Count(string(outs[HTML]), `<article class="card `); n != 1000 {
		t.Errorf("html: %d cards on the board", n)
	}
}

// TestOrderIndependent: the bytes depend on the set of cards, not on the
// order they come in.
func TestOrderIndependent(t *testing.T) {
	for _, cards := range [][]ledger.Card{richCards(), bigCards(200)} {
		r := rand.New(rand.NewPCG(7, 7))
		shuffled := slices.Clone(cards)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, f := range Formats() {
			o := Options{Now: testNow, Graph: true}
			if a, b := render(t, f, cards, o), render(t, f, shuffled, o); !bytes.Equal(a, b) {
				t.Errorf("%s: output depends on input order", f)
			}
		}
	}
}

// TestTextFormatsIgnoreNow: only html may change with the clock.
func TestTextFormatsIgnoreNow(t *testing.T) {
	for _, f := range Formats() {
		a := render(t, f, richCards(), Options{Graph: true, Now: testNow})
		b := render(t, f, richCards(), Options{Graph: true, Now: testNow.Add(1e6 * 3600e9)})
		if changed := !bytes.Equal(a, b); changed != f.TimeDependent() {
			t.Errorf("%s: output changed with Now = %v, TimeDependent() = %v", f, changed, f.TimeDependent())
		}
	}
}

func TestRenderDoesNotModifyInput(t *testing.T) {
	cards := richCards()
	before, _ := json.Marshal(cards)
	for _, f := range Formats() {
		render(t, f, cards, Options{Graph: true, Now: testNow})
	}
	if after, _ := json.Marshal(cards); !bytes.Equal(before, after) {
		t.Error("rendering changed the input cards")
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"markdown": Markdown, "MD": Markdown, "mermaid": Mermaid, "dot": DOT, "gv": DOT, "csv": CSV, "json": JSON, "jsonl": JSONL, " html ": HTML} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFormat("pdf"); err == nil || !strings.Contains(err.Error(), "markdown, mermaid, dot, csv, json, jsonl, html") {
		t.Errorf("ParseFormat(pdf) error = %v", err)
	}
	for path, want := range map[string]Format{"BACKLOG.md": Markdown, "x/dag.mmd": Mermaid, "g.gv": DOT, "a.CSV": CSV, "c.json": JSON, "c.ndjson": JSONL, "board.htm": HTML} {
		if got, ok := FormatForPath(path); !ok || got != want {
			t.Errorf("FormatForPath(%q) = %q, %v", path, got, ok)
		}
	}
	if _, ok := FormatForPath("BACKLOG"); ok {
		t.Error("FormatForPath(BACKLOG) guessed a format")
	}
}

func TestMarkdownEscaping(t *testing.T) {
	md := string(render(t, Markdown, richCards(), Options{}))
	for _, want := range []string{
		`#### <a id="card-a2"></a>A2 · Service \| API layer`,
		"#### <a id=\"card-a3\"></a>A3 · Title with newline and \\*stars\\*, \\`code\\` and \\[brackets\\](x)",
		`#### <a id="card-b2"></a>B2 · Quote "this" \<script>alert(1)\</script> \& \#hash; semi`,
		"- **Claimed** by `worker-1` (epoch 3), lease until 2026-03-01T10:25:00Z, 40% done",
		`- **Blocked:** waiting for the vendor's API key \| ticket \#42 second line`,
		"- Depends on: [A1](#card-a1) (done)",
		"- Depends on: Z9 (not shown)",
		"- Needed by: [A3](#card-a3) (ready), [B2](#card-b2) (blocked)\n",
		"- Priority 1 · attempts 3 of 3",
		"- [x] rollback tested",
		"- [ ] p99 \\< 50ms \\| under load",
		"labels `` `weird`label `` `ops`",
		"_15 lines not shown; see_ `bl show A3`",
		"| M2 — Ärger | 2 | 0 | 0 | 1 | 1 | 4 |",
		"| _No phase_ | 1 | 0 | 0 | 0 | 0 | 1 |",
		"## Claimed (2)",
		"### Phase M2 — Ärger",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// Phases in natural order within a lane: M1, M2 — Ärger, M10, none.
	ready := md[strings.Index(md, "## Ready"):strings.Index(md, "## Claimed")]
	var phases []string
	for _, m := range regexp.MustCompile(`(?m)^### (.*)$`).FindAllStringSubmatch(ready, -1) {
		phases = append(phases, m[1])
	}
	if want := []string{"Phase M1", "Phase M2 — Ärger", "Phase M10", "No phase"}; !slices.Equal(phases, want) {
		t.Errorf("ready lane phases %q, want %q", phases, want)
	}
	// Every line of a title stays on its heading; no raw newline leaks.
	if strings.Contains(md, "\nnewline and") {
		t.Error("a title's newline broke the heading")
	}
	// The description cannot close the <details> around it: it is fenced.
	if !strings.Contains(md, "```text\nWhy: the board must stay readable.\n\n````") && !strings.Contains(md, "````text\n") {
		t.Error("a body holding ``` was not fenced with a longer fence")
	}
}

func TestMarkdownEmptyLanes(t *testing.T) {
	md := string(render(t, Markdown, sparseCards(), Options{}))
	for _, want := range []string{"## Ready (1)\n", "## Claimed (0)\n\n_No cards._\n", "## Blocked (0)\n\n_No cards._\n", "## Done (1)\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	md = string(render(t, Markdown, nil, Options{Statuses: []ledger.Status{ledger.StatusReady}}))
	if strings.Contains(md, "## Done") || !strings.Contains(md, "## Ready (0)\n\n_No cards._\n") {
		t.Errorf("filtered empty board:\n%s", md)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	raw := render(t, CSV, richCards(), Options{})
	if !bytes.HasSuffix(raw, []byte("\r\n")) || bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Error("csv lines do not all end in CRLF")
	}
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], CSVHeader) {
		t.Fatalf("header %q", recs[0])
	}
	col := map[string]int{}
	for i, h := range CSVHeader {
		col[h] = i
	}
	rows := map[string][]string{}
	var order []string
	for _, r := range recs[1:] {
		if len(r) != len(CSVHeader) {
			t.Fatalf("row %q has %d fields", r[0], len(r))
		}
		rows[r[0]] = r
		order = append(order, r[0])
	}
	if want := []string{"A2", "B1", "E1", "A1", "x.y-z_1", "A3", "C2", "B2", "C1", "D1"}; !slices.Equal(order, want) {
		t.Errorf("csv rows in order %q, want claim order %q", order, want)
	}
	checks := []struct{ id, field, want string }{
		{"A3", "title", "Title with\nnewline and *stars*, `code` and [brackets](x)"},
		{"A2", "title", "Service | API layer"},
		{"A2", "labels", "api\nneeds review"},
		{"A2", "lease_expires_at", "2026-03-01T10:25:00Z"},
		{"A2", "progress", "40"},
		{"A2", "checkpoint", `{"step":"handlers","done":["list","show"]}`},
		{"B2", "depends_on", "B1\nA2"},
		{"B2", "blocked_reason", "waiting for the vendor's API key | ticket #42\nsecond line"},
		{"D1", "title", "'=SUM(A1:A9) looks like a formula"},
		{"D1", "close_note", "'-not a formula either"},
		{"D1", "priority", "-2"},
		{"B1", "title", "Ünïcödé — 日本語のタイトル 🚀"},
		{"C1", "progress", ""},
	}
	for _, c := range checks {
		if got := rows[c.id][col[c.field]]; got != c.want {
			t.Errorf("%s.%s = %q, want %q", c.id, c.field, got, c.want)
		}
	}
	if got := rows["A3"][col["body"]]; got != richCards()[2].Body {
		t.Errorf("A3 body did not survive: %q", got)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	want := sorted(richCards())
	var got []ledger.Card
	if err := json.Unmarshal(render(t, JSON, richCards(), Options{}), &got); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if !bytes.Equal(wantJSON, gotJSON) {
		t.Errorf("json round trip differs:\n%s\n%s", wantJSON, gotJSON)
	}
	lines := strings.Split(strings.TrimSuffix(string(render(t, JSONL, richCards(), Options{})), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("jsonl has %d lines", len(lines))
	}
	for i, l := range lines {
		var c ledger.Card
		if err := json.Unmarshal([]byte(l), &c); err != nil || c.ID != want[i].ID {
			t.Errorf("jsonl line %d: %v, id %q want %q", i+1, err, c.ID, want[i].ID)
		}
	}
	for _, key := range []string{`"depends_on":`, `"lease_expires_at":`, `"claim_owner":`, `"acceptance":`, `"blocked_reason":`, `"claim_ttl_seconds":`} {
		if !strings.Contains(string(render(t, JSONL, richCards(), Options{})), key) {
			t.Errorf("jsonl lacks the contract key %s", key)
		}
	}
	if got := string(render(t, JSON, nil, Options{})); got != "[]\n" {
		t.Errorf("empty json = %q", got)
	}
	if got := render(t, JSONL, nil, Options{}); len(got) != 0 {
		t.Errorf("empty jsonl = %q", got)
	}
	bad := richCards()[:1]
	bad[0].Checkpoint = json.RawMessage(`{not json`)
	if _, err := Bytes(JSON, bad, Options{}); err == nil {
		t.Error("a card with a broken checkpoint rendered as JSON")
	}
}

// dotLine is the subset of DOT RenderDOT writes, one statement per line.
var dotLine = regexp.MustCompile(`^  (?:(?:graph|node|edge) \[.*\]|` + dotID + ` \[.*\]|` + dotID + ` -> ` + dotID + `);$`)

const dotID = `"(?:[^"\\]|\\.)*"`

func TestDOTSyntax(t *testing.T) {
	for _, cards := range [][]ledger.Card{richCards(), nil, bigCards(100)} {
		out := string(render(t, DOT, cards, Options{Title: `say "hi" \N`}))
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if lines[0] != "digraph backlog {" || lines[len(lines)-1] != "}" {
			t.Fatalf("not a digraph:\n%s", out)
		}
		for _, l := range lines[1 : len(lines)-1] {
			if !dotLine.MatchString(l) {
				t.Errorf("not a DOT statement: %s", l)
			}
			if !quotesClosed(l) {
				t.Errorf("unclosed string: %s", l)
			}
		}
	}
	out := string(render(t, DOT, richCards(), Options{}))
	for _, want := range []string{
		`"A1" -> "A2";`,
		`"Z9" -> "C2";`,
		`"Z9" [label="Z9 (not exported)"`,
		`"B2" [label="B2\nQuote \"this\" <script>alert(1)</script> & #hash;…", tooltip="Quote \"this\" <script>alert(1)</script> & #hash; semi"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dot lacks %s", want)
		}
	}
}

// quotesClosed reports whether every DOT string on the line ends.
func quotesClosed(l string) bool {
	in := false
	for i := 0; i < len(l); i++ {
		switch {
		case in && l[i] == '\\':
			i++
		case l[i] == '"':
			in = !in
		}
	}
	return !in
}

func TestGeneratedByReadsTheBoardHeader(t *testing.T) {
	for cmd, want := range map[string]string{
		"":                                    "bl export --format markdown",
		"bl export --format markdown --graph": "bl export --format markdown --graph",
		"bl export --title 'A b' --phase M1":  "bl export --title 'A b' --phase M1",
	} {
		board := string(RenderMarkdown(richCards(), Options{Command: cmd}))
		if got, ok := GeneratedBy(board); !ok || got != want {
			t.Errorf("GeneratedBy(board made with Command %q) = %q, %v; want %q", cmd, got, ok, want)
		}
	}
	for _, s := range []string{"", "# Backlog\n", "<!-- Generated by hand -->\n", "\n<!-- Generated by `bl export`. -->\n"} {
		if got, ok := GeneratedBy(s); ok {
			t.Errorf("GeneratedBy(%q) = %q, true; want false", s, got)
		}
	}
}

func TestFormatsHelpNamesEveryFormat(t *testing.T) {
	help := FormatsHelp("  ")
	for _, f := range Formats() {
		if !regexp.MustCompile(`(?m)^  ` + string(f) + ` +\S`).MatchString(help) {
			t.Errorf("FormatsHelp has no line for %s:\n%s", f, help)
		}
	}
}
