package cli

import "fmt"

// linkEnds names the two cards of a link, either way a person reaches for:
// as arguments (bl link A2 A1) or as flags (bl link --from A2 --to A1).
// Embedded in link and unlink.
type linkEnds struct {
	FromArg *string `arg:"" optional:"" name:"from" placeholder:"FROM" help:"The card the link is on (or --from)."`
	ToArg   *string `arg:"" optional:"" name:"to" placeholder:"TO" help:"The card it points at (or --to)."`
	From    *string `name:"from" placeholder:"ID" help:"The card the link is on (the one that waits, for blocks)."`
	To      *string `name:"to" placeholder:"ID" help:"The card it points at (the one waited for, for blocks)."`
}

// ends is the two cards, each through cardNamed.
func (l linkEnds) ends(a *App, cmd string) (from, to string, err error) {
	if l.From != nil && l.FromArg != nil && l.ToArg == nil && l.To == nil { // bl link --from A2 A1
		l.ToArg, l.FromArg = l.FromArg, nil
	}
	if from, err = cardOf(cmd, "from", l.FromArg, l.From); err == nil {
		to, err = cardOf(cmd, "to", l.ToArg, l.To)
	}
	if err == nil && (from == "" || to == "") {
		err = usagef(fmt.Sprintf("name both cards: bl %s FROM TO (FROM depends on TO), or bl %s --from FROM --to TO", cmd, cmd))
	}
	if err != nil {
		return "", "", err
	}
	if from, err = a.cardNamed(from); err == nil {
		to, err = a.cardNamed(to)
	}
	return from, to, err
}
