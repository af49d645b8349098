package cli

import "fmt"

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
// agree, and an empty id names nothing.
func (c cardID) id(cmd string) (string, error) {
	id, err := cardOf(cmd, c.IDArg, c.IDFlag)
	if err == nil && id == "" {
		err = usagef(fmt.Sprintf("name the card: bl %s ID, or bl %s --id ID", cmd, cmd))
	}
	return id, err
}

// id is the card named, or "" for none.
func (c cardFilter) id(cmd string) (string, error) { return cardOf(cmd, c.IDArg, c.IDFlag) }

func cardOf(cmd string, arg, flag *string) (string, error) {
	for _, v := range []*string{arg, flag} {
		if v != nil && *v == "" {
			return "", usagef(fmt.Sprintf("the card id is empty: bl %s ID, or bl %s --id ID", cmd, cmd))
		}
	}
	switch {
	case arg != nil && flag != nil && *arg != *flag:
		return "", usagef(fmt.Sprintf("two cards named: %s as the argument and %s with --id; name one", *arg, *flag))
	case arg != nil:
		return *arg, nil
	case flag != nil:
		return *flag, nil
	}
	return "", nil
}
