package export

import (
	"fmt"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// boardNotes is how many of a card's latest notes a board shows; bl show
// lists them all.
const boardNotes = 5

// noteLines returns the notes a board shows, newest last, and how many
// older ones it leaves out.
func noteLines(c *ledger.Card) ([]ledger.Note, int) {
	notes := c.Notes
	if len(notes) > boardNotes {
		return notes[len(notes)-boardNotes:], len(notes) - boardNotes
	}
	return notes, 0
}

// writeNotesMD writes the card's latest notes, one line each, folded away.
func writeNotesMD(b *strings.Builder, c *ledger.Card) {
	notes, older := noteLines(c)
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(b, "<details><summary>Notes (%d)</summary>\n\n", len(c.Notes))
	for _, n := range notes {
		fmt.Fprintf(b, "- %s %s: %s\n", stamp(&n.At), codeSpan(Name(n.Author)), mdText(orDash(n.Text)))
	}
	if older > 0 {
		fmt.Fprintf(b, "\n_%s not shown; see_ `bl show %s`\n", plural(older, "older note"), c.ID)
	}
	b.WriteString("\n</details>\n\n")
}

// writeNotesHTML writes the card's latest notes, folded away.
func writeNotesHTML(b *strings.Builder, c *ledger.Card) {
	notes, older := noteLines(c)
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(b, "<details><summary>Notes (%d)</summary><ul class=\"notes\">", len(c.Notes))
	for _, n := range notes {
		fmt.Fprintf(b, "<li><time>%s</time> <code>%s</code>: %s</li>", stamp(&n.At), escHTML(Name(n.Author)), escHTML(oneLine(n.Text)))
	}
	if older > 0 {
		fmt.Fprintf(b, "<li>%s not shown</li>", plural(older, "older note"))
	}
	b.WriteString("</ul></details>\n")
}
