package cli

import (
	"github.com/bl-backlog/bl/ledger"
)

// LabelCmd adds or removes labels, keeping the card's others.
type LabelCmd struct {
	Add LabelAddCmd `cmd:"" help:"Add labels to a card, keeping its others."`
	Rm  LabelRmCmd  `cmd:"" aliases:"remove" help:"Remove labels from a card, keeping its others."`
}

func (LabelCmd) Help() string {
	return `Edits the labels a card holds when the change is written, so two people
labelling one card at once both keep theirs (bl update --label replaces
them all). A label already there, or already gone, is no change.

Examples:

    bl label add A1 backend
    bl label add A1 backend,db urgent
    bl label rm A1 urgent` + exitCodesHelp
}

// LabelAddCmd adds labels.
type LabelAddCmd struct{ labelEdit }

// LabelRmCmd removes labels.
type LabelRmCmd struct{ labelEdit }

func (c *LabelAddCmd) Run(a *App) error { return c.run(a, false) }

func (c *LabelRmCmd) Run(a *App) error { return c.run(a, true) }

// labelEdit is the arguments of bl label add and bl label rm.
type labelEdit struct {
	ID        string   `arg:"" name:"id" placeholder:"ID" help:"The card."`
	Labels    []string `arg:"" name:"label" placeholder:"LABEL" help:"The labels (several, or comma-separated)."`
	RequestID string   `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (c *labelEdit) run(a *App, remove bool) error {
	labels := splitList(c.Labels)
	var err error
	if len(labels) == 0 {
		err = usagef("name the labels: bl label add ID LABEL...")
	}
	id := c.ID
	if err == nil {
		id, err = a.cardNamed(c.ID)
	}
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	r := ledger.UpdateRequest{Mutation: a.Mutation(c.RequestID), ID: id}
	verb := "labelled"
	if remove {
		r.RemoveLabels, verb = labels, "unlabelled"
	} else {
		r.AddLabels = labels
	}
	card, err := b.Update(a.ctx, r)
	if err != nil {
		return err
	}
	return a.emitCard(card, verb)
}
