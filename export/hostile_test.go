package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bl-backlog/bl/internal/browsertest"
	"github.com/bl-backlog/bl/ledger"
	"golang.org/x/net/html"
)

// hostile is text a teammate can commit in a card: terminal escapes (a
// title change, colours, a screen clear), BEL, bidi overrides, C1 controls
// and markup for every format.
const hostile = "\x1b]0;pwned\x07\x1b[31mred\x1b[0m \u202Egnp.exe\u202C \u2066iso\u2069 \u0085c1\u009b2J \x7f" +
	"<script>alert(1)</script><img src=x onerror=alert(1)> **bold** [x](javascript:alert(1)) # h | p `c` \"q\" 'a' &amp;"

// HostileCards is one card holding hostile text in every field a person
// sees, and one with a status no bl writes (a forged snapshot's), whose
// renderings must not turn it into markup either.
func hostileCards() []ledger.Card {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exp := at.Add(time.Hour)
	prog := 40
	c := ledger.Card{ID: "H1", Title: hostile, Body: hostile + "\n```\n</details>" + hostile + "\n\x1b[2J\x07line",
		Phase: hostile, Labels: []string{hostile, "ok"}, Status: ledger.StatusClaimed, DependsOn: []string{"H2"},
		Acceptance: []string{hostile}, ClaimOwner: hostile, ClaimEpoch: 1, ClaimedAt: &at, ClaimTTLSeconds: 3600,
		LeaseExpiresAt: &exp, Attempts: 1, Progress: &prog, BlockedReason: hostile, CloseNote: hostile,
		CreatedAt: at, UpdatedAt: at, Version: 2,
		Notes: []ledger.Note{{Text: hostile, Author: hostile, At: at}}}
	d := ledger.Card{ID: "H2", Title: hostile, Status: ledger.Status(`x"><img src=x onerror="document.body.setAttribute('data-pwned',1)">` + "\x1b[31m"), BlockedReason: hostile,
		Labels: []string{}, DependsOn: []string{}, Acceptance: []string{}, CreatedAt: at, UpdatedAt: at, Version: 1}
	b := d
	b.ID, b.Status, b.DependsOn = "H3", ledger.StatusBlocked, []string{"H1"}
	e := d
	e.ID, e.Status, e.CloseNote = "H4", ledger.StatusDone, hostile
	return []ledger.Card{c, d, b, e}
}

// unsafeRune reports a rune no human-facing rendering may hold raw: a
// control character other than newline and tab, or a bidi control.
func unsafeRune(r rune) bool {
	return (unicode.IsControl(r) && r != '\n' && r != '\t') || bidiControl(r) || r == utf8.RuneError
}

// Every export format over the hostile card: the human ones (csv too: it
// is opened by people, in spreadsheets) hold no raw control or bidi
// characters and no markup of the card's making; the machine ones keep the
// text exact.
func TestExportHostileCard(t *testing.T) {
	cards := hostileCards()
	conflicts := []ledger.Conflict{{Event: "e1", At: "2026-01-02T03:04:05Z", Op: ledger.OpClaim, Card: "H1", Actor: hostile, Owner: hostile, Winner: hostile, Reason: hostile}}
	o := Options{Title: hostile, Now: time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC), Conflicts: conflicts, WaitingOn: map[string][]string{"H1": {"H2"}}}
	for _, f := range Formats() {
		out, err := Bytes(f, cards, o)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch f {
		case JSON, JSONL:
			checkExact(t, f, out)
			continue
		case CSV:
			checkCSV(t, out)
			continue
		case Beads:
			// Machine JSONL for beads: exact text, control characters
			// escaped by the JSON encoder.
			if i := bytes.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' }); i >= 0 {
				t.Errorf("%s holds a raw control character at %d", f, i)
			}
			continue
		}
		for i, r := range string(out) {
			if unsafeRune(r) {
				t.Errorf("%s holds %U at byte %d: %q", f, r, i, around(out, i))
				break
			}
		}
		switch f {
		case HTML:
			checkHTML(t, out)
		case Markdown:
			checkMarkdown(t, out)
		case Mermaid:
			if bytes.Contains(out, []byte("<script")) || bytes.Contains(out, []byte("<img")) {
				t.Errorf("%s holds raw markup:\n%s", f, out)
			}
		case DOT:
			// Text is only ever inside a quoted string, its quotes escaped:
			// Graphviz shows it as text.
			if !bytes.Contains(out, []byte(`\"q\"`)) || bytes.Contains(out, []byte(`"q"`)) && !bytes.Contains(out, []byte(`\"q\"`)) {
				t.Errorf("dot does not escape quotes:\n%s", out)
			}
		}
	}
}

func around(b []byte, i int) []byte {
	return b[max(0, i-40):min(len(b), i+40)]
}

// checkExact: a machine format keeps the card's text exactly, and JSON
// holds no raw control characters (they are escaped).
func checkExact(t *testing.T, f Format, out []byte) {
	t.Helper()
	switch f {
	case JSON, JSONL:
		if i := bytes.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' }); i >= 0 {
			t.Errorf("%s holds a raw control character at %d", f, i)
		}
		first := out
		if f == JSONL {
			first, _, _ = bytes.Cut(out, []byte("\n"))
		}
		var c ledger.Card
		if f == JSON {
			var cs []ledger.Card
			if err := json.Unmarshal(out, &cs); err != nil || len(cs) == 0 {
				t.Fatalf("%s: %v", f, err)
			}
			c = cs[0]
		} else if err := json.Unmarshal(first, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Title != hostile && c.ID == "H1" {
			t.Errorf("%s changed the title: %q", f, c.Title)
		}
	}
}

// checkCSV: the csv export shows text as the terminal does (Printable):
// no raw control or bidi character but the CRLF line ends, and the title
// cell is the Printable title.
func checkCSV(t *testing.T, out []byte) {
	t.Helper()
	for i, r := range string(bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))) {
		if unsafeRune(r) {
			t.Fatalf("csv holds %U at byte %d (CRLF as LF): %q", r, i, around(out, i))
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 2 || recs[1][1] != Printable(hostile) {
		t.Errorf("csv title is not the Printable title: %v %q", err, recs)
	}
}

// checkHTML parses the page as a browser would and allows only the
// elements and attributes the renderer itself writes, with no event
// handler and no script anywhere.
func checkHTML(t *testing.T, out []byte) {
	t.Helper()
	allowed := map[string]bool{"html": true, "head": true, "body": true, "meta": true, "title": true, "style": true,
		"header": true, "h1": true, "h2": true, "h3": true, "h4": true, "p": true, "b": true, "span": true, "section": true,
		"div": true, "svg": true, "defs": true, "marker": true, "path": true, "g": true, "rect": true, "text": true, "a": true,
		"article": true, "ul": true, "li": true, "details": true, "summary": true, "pre": true, "time": true, "code": true,
		"footer": true}
	doc, err := html.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if !allowed[n.Data] {
				t.Errorf("html holds a <%s> element", n.Data)
			}
			for _, a := range n.Attr {
				switch {
				case strings.HasPrefix(strings.ToLower(a.Key), "on"):
					t.Errorf("html holds an event handler %s=%q on <%s>", a.Key, a.Val, n.Data)
				case a.Key == "href" && !strings.HasPrefix(a.Val, "#"):
					t.Errorf("html links out: href=%q", a.Val)
				case a.Key == "class" && strings.ContainsAny(a.Val, "<>\"'"):
					t.Errorf("html class attribute holds markup: %q", a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// rawTag is an HTML tag a Markdown viewer would render: '<' not escaped
// with a backslash, followed by a letter.
var rawTag = regexp.MustCompile(`(^|[^\\])<(script|img|b>|/details>\S)`)

var (
	codeSpan2 = regexp.MustCompile("``.*?``")
	codeSpan1 = regexp.MustCompile("`[^`\n]*`")
)

// checkMarkdown: outside the fenced code blocks the renderer opens, no
// markup of the card's making; the body stays inside its fence.
func checkMarkdown(t *testing.T, out []byte) {
	t.Helper()
	var prose []string
	fence := ""
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case fence == "" && strings.HasPrefix(l, "```"):
			fence = strings.TrimRight(l, "text")
		case fence != "" && l == fence:
			fence = ""
		case fence == "":
			prose = append(prose, l)
		}
	}
	if fence != "" {
		t.Errorf("markdown leaves a fence open: %q", fence)
	}
	// Code spans show their text as it is: markup inside them is text.
	text := codeSpan2.ReplaceAllString(strings.Join(prose, "\n"), "")
	text = codeSpan1.ReplaceAllString(text, "")
	if m := rawTag.FindString(text); m != "" {
		t.Errorf("markdown holds raw markup %q outside code:\n%s", m, text)
	}
	if strings.Contains(text, "](javascript:") && !strings.Contains(text, `\](javascript:`) {
		t.Errorf("markdown holds a javascript link:\n%s", text)
	}
}

// The html export of the hostile cards in a real browser: after the page
// has loaded (an <img> with a bad src fires onerror at once), the DOM holds
// no element and no attribute the cards' text made.
func TestHostileHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not starting a browser")
	}
	bin := browsertest.Chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "board.html")
	out, err := Bytes(HTML, hostileCards(), Options{Title: hostile})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, out, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--virtual-time-budget=2000", "--dump-dom", "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	if !bytes.Contains(dom, []byte("</html>")) {
		t.Fatalf("no DOM dumped:\n%s", dom)
	}
	for _, bad := range []string{`data-pwned="`, "<img", "<script"} {
		if bytes.Contains(dom, []byte(bad)) {
			t.Errorf("the DOM holds %q:\n%s", bad, dom)
		}
	}
}
