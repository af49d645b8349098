package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// TextconvCmd renders a backlog file for git diff.
type TextconvCmd struct {
	File string `arg:"" name:"file" placeholder:"FILE" help:"A ledger.jsonl, archive segment or snapshot.json, as git passes it."`
}

func (TextconvCmd) Help() string {
	return `Git runs this to show backlog files readably in git diff, git log -p and
git show: one line per event (as bl log prints it) for ledger.jsonl and
archive segments, one line per card for snapshot.json (any FILE ending in .json). Set it up in a
clone (it only changes what git diff shows, never a merge):

    git config diff.bl.textconv 'bl textconv'

and in .gitattributes:

    .backlog/ledger.jsonl diff=bl
    .backlog/archive/*.jsonl diff=bl
    .backlog/snapshot.json diff=bl

A file that does not read as a backlog file is printed as it is, after a
line saying why. The output depends only on the file, never on the clock.` + exitCodesHelp
}

func (c *TextconvCmd) Run(a *App) error {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return err
	}
	var b strings.Builder
	if strings.HasSuffix(c.File, ".json") {
		err = textconvSnapshot(&b, c.File, data)
	} else {
		_, _, err = ledger.ReadEvents(c.File, 0, ledger.Cursor{}, func(e *ledger.Event) error {
			eventLine(&b, e, nil)
			return nil
		})
	}
	if err != nil {
		fmt.Fprintf(a.Stdout, "# bl textconv: %v; the file as it is follows\n", err)
		_, err = a.Stdout.Write(data)
		return err
	}
	_, err = io.WriteString(a.Stdout, b.String())
	return err
}

// textconvSnapshot writes one line per card of a snapshot, by id, with
// nothing that depends on the clock.
func textconvSnapshot(w io.Writer, name string, data []byte) error {
	s, err := ledger.FoldSnapshot(name, data)
	if err != nil {
		return err
	}
	for _, c := range s.List(ledger.Filter{}, time.Time{}, ledger.SortID) {
		fmt.Fprintf(w, "%s [%s] priority %d", text(c.ID), c.Status, c.Priority)
		if c.Phase != "" {
			fmt.Fprintf(w, " phase %s", nameText(c.Phase))
		}
		if c.ClaimOwner != "" {
			fmt.Fprintf(w, " owner %s epoch %d", nameText(c.ClaimOwner), c.ClaimEpoch)
		}
		fmt.Fprintf(w, " v%d  %s\n", c.Version, text(c.Title))
	}
	for _, c := range s.Conflicts() {
		fmt.Fprintf(w, "conflict %s %s\n", text(c.Card), conflictText(c))
	}
	return nil
}
