package cli

import (
	"fmt"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// cardID names the card a command acts on, either way a person reaches
// for: as the first argument (bl complete A1) or as a flag (bl complete
// --id A1). Embedded in every command that acts on one card.
type cardID struct {
	IDArg  *string `arg:"" optional:"" name:"id" placeholder:"ID" help:"The card (or --id ID)."`
	IDFlag *string `name:"id" placeholder:"ID" help:"The card (or as the argument)."`
}

// cardFilter is cardID for the commands where naming a card is optional
// (claim, reclaim, log, watch).
type cardFilter struct {
	IDArg  *string `arg:"" optional:"" name:"id" placeholder:"ID" help:"Only this card (or --id ID)."`
	IDFlag *string `name:"id" placeholder:"ID" help:"Only this card (or as the argument)."`
}

// id is the card named, required: both forms may be given only when they
// agree, and an empty id names nothing. The word given goes through
// cardNamed.
func (c cardID) id(a *App, cmd string) (string, error) {
	id, err := cardOf(cmd, "id", c.IDArg, c.IDFlag)
	if err == nil && id == "" {
		err = usagef(fmt.Sprintf("name the card: bl %s ID, or bl %s --id ID", cmd, cmd))
	}
	if err != nil {
		return "", err
	}
	return a.cardNamed(id)
}

// id is the card named, or "" for none.
func (c cardFilter) id(a *App, cmd string) (string, error) {
	id, err := cardOf(cmd, "id", c.IDArg, c.IDFlag)
	if err != nil || id == "" {
		return id, err
	}
	return a.cardNamed(id)
}

// cardNamed is the card a word a person typed names: the one place every
// command (and so every MCP tool) turns a word into a card id. A card's
// id names it; so does, for an imported card, its source's key (bd-44d0),
// and a unique prefix of four characters or more (c107 for bl-c10704nf).
// A word naming several cards is refused with the candidates listed (exit
// 2, code ambiguous_id); a word naming none is returned as it is, for the
// command to report (not found, with bl search as the hint).
func (a *App) cardNamed(word string) (string, error) {
	b, err := a.Open()
	if err != nil {
		return "", err
	}
	ids, err := b.CardsNamed(word)
	switch {
	case err != nil:
		return "", err
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) == 0:
		return word, nil
	}
	return "", ambiguousID(b, word, ids)
}

// cardsNamed is cardNamed for each word of a list.
func (a *App) cardsNamed(words []string) ([]string, error) {
	out := make([]string, 0, len(words))
	for _, w := range words {
		id, err := a.cardNamed(w)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// ambiguousIDShown is how many candidates an ambiguous id lists.
const ambiguousIDShown = 10

// ambiguousIDError is a word that names several cards: the message names
// them, the hint lists them with their titles, one a line.
type ambiguousIDError struct{ msg, hint string }

func (e *ambiguousIDError) Error() string { return e.msg }
func (e *ambiguousIDError) Hint() string  { return e.hint }

func ambiguousID(b *ledger.Backlog, word string, ids []string) error {
	shown := ids[:min(len(ids), ambiguousIDShown)]
	msg := fmt.Sprintf("%q names %d cards: %s", word, len(ids), strings.Join(shown, ", "))
	if len(shown) < len(ids) {
		msg += ", ..."
	}
	lines := make([]string, len(shown))
	for i, id := range shown {
		lines[i] = id
		if c, err := b.Get(id); err == nil {
			lines[i] += "  " + text(c.Title)
		}
	}
	hint := "one of:\n      " + strings.Join(lines, "\n      ")
	return &ambiguousIDError{msg + "; give more of the id", hint}
}

// cardOf is the card named as an argument or with the flag --name.
func cardOf(cmd, name string, arg, flag *string) (string, error) {
	for _, v := range []*string{arg, flag} {
		if v != nil && *v == "" {
			return "", usagef(fmt.Sprintf("the card id is empty: bl %s ID, or bl %s --%s ID", cmd, cmd, name))
		}
	}
	switch {
	case arg != nil && flag != nil && *arg != *flag:
		return "", usagef(fmt.Sprintf("two cards named: %s as the argument and %s with --%s; name one", *arg, *flag, name))
	case arg != nil:
		return *arg, nil
	case flag != nil:
		return *flag, nil
	}
	return "", nil
}
