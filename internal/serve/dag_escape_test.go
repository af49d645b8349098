package serve

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/net/html"

	"github.com/bl-backlog/bl/ledger"
)

// /dag serves the html export of the live backlog: a card's text, with
// terminal escapes, bidi overrides and markup, comes out as text. The page
// is parsed as a browser parses it: no element or attribute of the card's
// making, no control character.
func TestDagHostileCard(t *testing.T) {
	f := newFixture(t, Options{})
	evil := "\x1b]0;pwned\a\u202eevil <script>window.pwned=1</script><img src=x onerror=alert(1)> \"q\" <b>b</b>"
	a, _, err := f.b.Create(context.Background(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: actor}, Title: evil, Body: evil + "\n\x1b[2J\a"})
	if err != nil {
		t.Fatal(err)
	}
	// bl refuses such a phase or label; a teammate's older bl wrote them.
	line, err := ledger.EncodeLine(&ledger.Event{V: 1, ID: "0123456789abcdef", At: time.Now().UTC(), Actor: actor, Op: ledger.OpUpdate, Card: a.ID,
		Fields: &ledger.Fields{Phase: &evil, Labels: &[]string{evil}}})
	if err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(f.dir, "ledger.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	lf.Write(line)
	lf.Close()
	if c, err := f.b.Get(a.ID); err != nil || c.Phase != evil || len(c.Labels) != 1 {
		t.Fatalf("the teammate's line does not fold: %+v, %v", c, err)
	}
	f.create(evil, a.ID)
	_, body := f.get("/dag")
	if i := bytes.IndexFunc(body, func(r rune) bool {
		return (unicode.IsControl(r) && r != '\n' && r != '\t') || r == '\u202e'
	}); i >= 0 {
		t.Errorf("/dag holds a control character at %d: %q", i, body[max(0, i-30):min(len(body), i+30)])
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "img", "iframe", "object", "embed":
				t.Errorf("/dag holds a <%s> element", n.Data)
			}
			if n.Data == "b" && n.FirstChild != nil && n.FirstChild.Data == "b" {
				t.Error("/dag turned the card's <b> into markup")
			}
			for _, at := range n.Attr {
				if strings.HasPrefix(strings.ToLower(at.Key), "on") {
					t.Errorf("/dag holds %s=%q", at.Key, at.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}
