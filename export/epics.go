package export

import (
	"fmt"

	"github.com/bl-backlog/bl/ledger"
)

// epicFact is what the boards say of an epic: how many of its exported
// children are done, and, while some are open, that it waits on them.
// "" for a card without children.
func epicFact(c *ledger.Card, kids map[string][]*ledger.Card) string {
	in := kids[c.ID]
	if len(in) == 0 && c.OpenChildren == 0 {
		return ""
	}
	done := 0
	for _, k := range in {
		if k.Status == ledger.StatusDone {
			done++
		}
	}
	f := fmt.Sprintf("epic: %d/%d children done", done, len(in))
	if c.OpenChildren > 0 && c.Status != ledger.StatusDone {
		f += fmt.Sprintf(", waiting on %d open", c.OpenChildren)
	}
	return f
}

// childrenOf maps each card id to its children among cards.
func childrenOf(cards []ledger.Card) map[string][]*ledger.Card {
	m := map[string][]*ledger.Card{}
	for i := range cards {
		if p := cards[i].Parent; p != "" {
			m[p] = append(m[p], &cards[i])
		}
	}
	return m
}
