package export

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// The boards show a card's latest notes, escaped, and say how many older
// ones they leave out.
func TestBoardsShowNotes(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	c := ledger.Card{ID: "A", Title: "t", Status: ledger.StatusReady, Labels: []string{}, DependsOn: []string{}, Acceptance: []string{}, CreatedAt: at, UpdatedAt: at}
	for i := range 7 {
		c.Notes = append(c.Notes, ledger.Note{Text: fmt.Sprintf("note %d <b>*x*</b>\nsecond line", i), Author: "w<1>", At: at.Add(time.Duration(i) * time.Minute)})
	}
	md := string(RenderMarkdown([]ledger.Card{c}, Options{}))
	for _, want := range []string{"<summary>Notes (7)</summary>", "- 2026-03-04T05:12:07Z `w<1>`: note 6 \\<b>\\*x\\*\\</b> second line", "_2 older notes not shown; see_ `bl show A`"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown board lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "note 1 ") {
		t.Error("markdown board shows a note older than the last five")
	}
	h := string(RenderHTML([]ledger.Card{c}, Options{Now: at}))
	for _, want := range []string{"<summary>Notes (7)</summary>", "<code>w&lt;1&gt;</code>: note 6 &lt;b&gt;*x*&lt;/b&gt; second line", "2 older notes not shown"} {
		if !strings.Contains(h, want) {
			t.Errorf("html board lacks %q", want)
		}
	}
}
