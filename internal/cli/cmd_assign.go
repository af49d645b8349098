package cli

import (
	"github.com/bl-backlog/bl/ledger"
)

// AssignCmd plans a card for someone: the assignee, no lease.
type AssignCmd struct {
	cardID    `embed:""`
	Who       *string `arg:"" optional:"" name:"who" help:"Who the card is planned for; - assigns it to nobody."`
	Clear     bool    `help:"Assign the card to nobody."`
	RequestID string  `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (AssignCmd) Help() string {
	return `Plans the card for someone: its assignee. Assigning takes no lease and
changes no status; the card waits in the pool for its assignee:

  - a plain bl claim (and bl ready) by anyone else passes it over, so an
    agent never takes work a lead planned for bob; --any takes or lists
    it all the same;
  - bob's plain claim takes it, in claim order among the cards assigned to
    bob and the unassigned ones; bl claim --mine takes only bob's;
  - a claim that names the card (bl claim ID) takes it, whoever it is
    assigned to.

The assignee is compared with the claim's owner as written (bob is not
bob@host). bl list --assignee bob lists bob's cards, --assignee - the
unassigned ones; create and update take --assignee too.

Examples:

    bl assign A4 bob
    bl assign A4 -
    bl assign A4 --clear
    bl list --assignee bob` + exitCodesHelp
}

func (c *AssignCmd) Run(a *App) error {
	if c.IDFlag != nil && c.IDArg != nil && c.Who == nil { // bl assign --id A4 bob
		c.Who, c.IDArg = c.IDArg, nil
	}
	if c.IDArg == nil && c.IDFlag == nil && c.Who == nil && !c.Clear {
		return usagef("name the card and who it is for: bl assign ID WHO (or bl assign ID --clear)")
	}
	id, err := c.id(a, "assign")
	if err == nil {
		switch {
		case c.Clear && c.Who != nil:
			err = usagef("--clear and a name given: bl assign ID WHO, or bl assign ID --clear")
		case !c.Clear && c.Who == nil:
			err = usagef("name who the card is for: bl assign ID WHO (or --clear)")
		}
	}
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	who := ""
	if c.Who != nil {
		who = *c.Who
	}
	card, err := b.Update(a.ctx, ledger.UpdateRequest{Mutation: a.Mutation(c.RequestID), ID: id,
		Fields: ledger.Fields{Assignee: assigneeField(who)}})
	if err != nil {
		return err
	}
	verb := "assigned"
	if who == "" || who == "-" {
		verb = "unassigned"
	}
	return a.emitCard(card, verb)
}

// assigneeField is the assignee a flag or argument names: "-" (and "")
// is nobody.
func assigneeField(who string) *string {
	if who == "-" {
		who = ""
	}
	return &who
}
