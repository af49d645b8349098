package export

import (
	"fmt"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// byCard groups o.Conflicts by card, each card's in fold order.
func (o Options) byCard() map[string][]ledger.Conflict {
	if len(o.Conflicts) == 0 {
		return nil
	}
	m := map[string][]ledger.Conflict{}
	for _, c := range o.Conflicts {
		m[c.Card] = append(m[c.Card], c)
	}
	return m
}

// conflictParts are the pieces of a conflict a board shows, user text
// already made one printable line: the op, who lost (the owner, else the
// actor), who held the card instead ("" when not known), when and why.
func conflictParts(c ledger.Conflict) (op, loser, winner, when, reason string) {
	loser = c.Owner
	if loser == "" {
		loser = c.Actor
	}
	when = c.At
	if c.Clock != "" {
		when = c.Clock
	}
	return oneLine(string(c.Op)), oneLine(loser), oneLine(c.Winner), oneLine(when), oneLine(c.Reason)
}

// writeConflictsMD lists a card's conflicts on the markdown board: the
// events the fold refused (a claim that lost a race merged in from another
// clone, a fenced heartbeat), with who lost, to whom, when and why.
func writeConflictsMD(b *strings.Builder, cs []ledger.Conflict) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(b, "- **%s** (events the fold refused):\n", plural(len(cs), "conflict"))
	for _, c := range cs {
		op, loser, winner, when, reason := conflictParts(c)
		line := fmt.Sprintf("  - %s by %s", mdText(op), codeSpan(loser))
		if winner != "" {
			line += " lost to " + codeSpan(winner)
		}
		fmt.Fprintf(b, "%s, %s: %s\n", line, mdText(when), mdText(reason))
	}
}

// conflictsHTML is writeConflictsMD for the html board: one meta line per
// conflict, everything escaped, badged like an expired lease (both ask a
// person to look).
func conflictsHTML(cs []ledger.Conflict) []string {
	var out []string
	for _, c := range cs {
		op, loser, winner, when, reason := conflictParts(c)
		f := fmt.Sprintf("<span class=\"badge expired\">conflict</span> %s by <b>%s</b>", escHTML(op), escHTML(loser))
		if winner != "" {
			f += " lost to <b>" + escHTML(winner) + "</b>"
		}
		out = append(out, f+", "+escHTML(when)+": "+escHTML(reason))
	}
	return out
}
