package cli

import (
	"fmt"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// NoteCmd adds a note to a card's case file.
type NoteCmd struct {
	ID        *string  `name:"id" placeholder:"ID" help:"Card id (or the first argument)."`
	Text      []string `arg:"" name:"text" help:"The card id unless --id is given, then the note (words are joined with spaces)."`
	Owner     string   `help:"Only as this lease owner: the note is refused once the lease is gone."`
	Epoch     int64    `help:"With --owner: only at this epoch."`
	RequestID string   `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (NoteCmd) Help() string {
	return `Adds a note to the card's case file, so whoever works on it next picks up
where the last one stopped. Anyone may add a note, whatever the card's
status; with --owner (and --epoch) it is fenced like heartbeat. bl show
lists the notes with author and time, bl log and the board exports show
them too. A note is at most 4 KiB; a card keeps its last 32 (bl log keeps
them all).

Examples:

    bl note A1 "looked at it: the flake is in the fixture"
    bl note --id A1 "tried bumping the timeout; the flake is in the fixture"
    bl note --id $BL_CARD --owner $BL_OWNER --epoch $BL_EPOCH "step 2 of 3 done"` + exitCodesHelp
}

func (c *NoteCmd) Run(a *App) error {
	id, text, err := c.idText()
	if err == nil {
		id, err = a.cardNamed(id)
	}
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	owner := a.fencedOwner(c.Owner, c.Epoch)
	card, err := b.Note(a.ctx, ledger.NoteRequest{Mutation: a.Mutation(c.RequestID), ID: id, Owner: owner, Epoch: c.Epoch, Text: text})
	if err != nil {
		return err
	}
	return a.emitCard(card, "noted")
}

// idText splits the arguments: the card is --id, or else the first
// argument, and the rest is the note.
func (c *NoteCmd) idText() (id, text string, err error) {
	words := c.Text
	if c.ID != nil {
		id = *c.ID
	} else {
		id, words = words[0], words[1:]
	}
	if id == "" {
		return "", "", usagef("the card id is empty: bl note ID TEXT, or bl note --id ID TEXT")
	}
	if len(words) == 0 {
		return "", "", usagef(fmt.Sprintf("the note needs text: bl note %s TEXT", id))
	}
	return id, strings.Join(words, " "), nil
}
