package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

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
them all). A label already there, or already gone, is no change: bl
says so (A1 has no label urgent), writes nothing for it and exits 0, as
an update that changes nothing does.

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
		verb := "add"
		if remove {
			verb = "rm"
		}
		err = usagef("name the labels: bl label " + verb + " ID LABEL...")
	}
	id := c.ID
	if err == nil {
		id, err = a.cardNamed(c.ID)
	}
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	// The labels the card holds already (add) or lacks (rm) are no
	// change: named, so "unlabelled" never reports a removal that was
	// not made. With none left, nothing is written.
	held, err := b.Get(id)
	if err != nil {
		return err
	}
	var moot, change []string
	for _, l := range labels {
		if slices.Contains(held.Labels, l) != remove {
			// A label no card could hold is refused, as add refuses it:
			// "has no label x\u200b" would print as "has no label x".
			if remove {
				if err := ledger.ValidName("label", l); err != nil {
					return err
				}
			}
			moot = append(moot, l)
		} else {
			change = append(change, l)
		}
	}
	verb, card := "unchanged", held
	switch {
	case len(change) > 0 && remove:
		verb = "unlabelled"
	case len(change) > 0:
		verb = "labelled"
	}
	// A request id is looked up even with nothing to change: a retry
	// answers as its first attempt did.
	if edit := change; len(edit) > 0 || c.RequestID != "" {
		if len(edit) == 0 {
			edit = labels
		}
		r := ledger.UpdateRequest{Mutation: a.Mutation(c.RequestID), ID: id, AddLabels: edit}
		if remove {
			r.AddLabels, r.RemoveLabels = nil, edit
		}
		if card, err = b.Update(a.ctx, r); err != nil {
			return err
		}
	}
	return a.emit(card, func(w io.Writer) {
		if len(moot) > 0 {
			quoted := make([]string, len(moot))
			for i, l := range moot {
				quoted[i] = nameText(l)
			}
			has := "already has"
			if remove {
				has = "has no"
			}
			fmt.Fprintf(w, "%s %s label %s\n", id, has, strings.Join(quoted, ", "))
		}
		fmt.Fprintf(w, "%s %s\n", verb, a.cardLine(card))
	})
}
