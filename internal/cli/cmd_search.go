package cli

import (
	"strings"

	"github.com/bl-backlog/bl/internal/search"
	"github.com/bl-backlog/bl/ledger"
)

// SearchCmd finds cards by text.
type SearchCmd struct {
	Text  []string `arg:"" name:"text" help:"The words to look for (every one must be found; any case)."`
	State []string `placeholder:"STATE" help:"Only cards standing so: ready, waiting, claimed, expired, blocked, done, or claimable."`
	Limit int      `help:"At most this many (0 = all)."`
}

func (SearchCmd) Help() string {
	return `Lists the cards that hold every word of TEXT in their id, title, labels,
acceptance criteria, body or notes, whatever the case, done cards
included. Best first: a card whose id is a word, then id and title
matches, then labels, acceptance, body and notes; cards that rank the same
keep claim order. bl list --search filters the same way in list's order.

Examples:

    bl search login
    bl search "flaky timeout" --state ready,waiting
    bl search A12 --json` + exitCodesHelp
}

func (c *SearchCmd) Run(a *App) error {
	query := strings.Join(c.Text, " ")
	err := notNegative("limit", c.Limit)
	if err == nil && len(search.Words(query)) == 0 {
		err = usagef("nothing to search for: give the words, e.g. bl search login")
	}
	states, serr := parseStates(splitList(c.State))
	if err == nil {
		err = serr
	}
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	all, err := b.List(ledger.Filter{}, ledger.SortClaim)
	if err != nil {
		return err
	}
	results := search.Cards(all, query)
	cards := make([]ledger.Card, len(results))
	for i, r := range results {
		cards[i] = *r.Card
	}
	if cards, err = a.inStates(cards, states); err != nil {
		return err
	}
	if c.Limit > 0 && len(cards) > c.Limit {
		cards = cards[:c.Limit]
	}
	return a.emitCards(cards)
}
