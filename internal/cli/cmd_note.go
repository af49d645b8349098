package cli

import (
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// NoteCmd adds a note to a card's case file.
type NoteCmd struct {
	ID        string   `name:"id" required:"" help:"Card id."`
	Text      []string `arg:"" name:"text" help:"The note (words are joined with spaces)."`
	Owner     string   `help:"Only as this lease owner: the note is refused once the lease is gone."`
	Epoch     int64    `help:"With --owner: only at this epoch."`
	RequestID string   `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func init() {
	register(command{name: "note", rank: 110, help: "Add a note to a card's case file.", new: func() any { return &NoteCmd{} }})
}

func (NoteCmd) Help() string {
	return `Adds a note to the card's case file, so whoever works on it next picks up
where the last one stopped. Anyone may add a note, whatever the card's
status; with --owner (and --epoch) it is fenced like heartbeat. bl show
lists the notes with author and time, bl log and the board exports show
them too. A note is at most 4 KiB; a card keeps its last 32 (bl log keeps
them all).

Examples:

    bl note --id A1 "tried bumping the timeout; the flake is in the fixture"
    bl note --id $BL_CARD --owner $BL_OWNER --epoch $BL_EPOCH "step 2 of 3 done"` + exitCodesHelp
}

func (c *NoteCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	owner := a.fencedOwner(c.Owner, c.Epoch)
	card, err := b.Note(a.ctx, ledger.NoteRequest{Mutation: a.Mutation(c.RequestID), ID: c.ID, Owner: owner, Epoch: c.Epoch, Text: strings.Join(c.Text, " ")})
	if err != nil {
		return err
	}
	return a.emitCard(card, "noted")
}
