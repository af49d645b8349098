package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// writeJSON prints one JSON document with a trailing newline, HTML escaping
// off so titles print as written.
func writeJSON(w io.Writer, v any) error {
	b, ok := cardJSON(v)
	if !ok {
		var err error
		if b, err = json.MarshalIndentWithOption(v, "", "  ", json.DisableHTMLEscape()); err != nil {
			return err
		}
	}
	_, err := w.Write(append(b, '\n'))
	return err
}

// writeJSON is writeJSON on stdout, with the derived members of the cards
// stand read.
func (a *App) writeJSON(v any) error {
	if c, ok := v.(*ledger.Card); ok && c != nil {
		v = *c
	}
	var b []byte
	switch v := v.(type) {
	case ledger.Card:
		if st, ok := a.standing[v.ID]; ok {
			b, _ = CardJSON(v, st)
		}
	case []ledger.Card:
		return a.writeCardsJSON(a.Stdout, v)
	case relatives:
		var err error
		if b, err = a.relativesJSON(v); err != nil {
			return err
		}
	}
	if b == nil {
		return writeJSON(a.Stdout, v)
	}
	_, err := a.Stdout.Write(append(b, '\n'))
	return err
}

// cardJSON writes the documents most commands print, a card, no card or a
// list of cards, as writeJSON's JSON encoder would, without it. ok is false
// for anything else.
func cardJSON(v any) (b []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return []byte("null"), true
	case ledger.Card:
		return export.AppendCardJSON(nil, &v, true)
	case *ledger.Card:
		return export.AppendCardJSON(nil, v, true)
	case []ledger.Card:
		return export.AppendCardsJSON(nil, v, true)
	}
	return nil, false
}

// writeJSONLine prints one compact JSON document on one line.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.MarshalWithOption(v, json.DisableHTMLEscape())
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// emit prints v as JSON under --json, else runs human. Human output
// passes through export.Printable as a whole, so nothing in it reaches the
// terminal as a control sequence even where a field was not put through
// text; each field of user text also goes through text, so it cannot forge
// a line either. --json stays exact.
func (a *App) emit(v any, human func(w io.Writer)) error {
	if err := a.stand(v); err != nil {
		return err
	}
	if a.JSON {
		return a.writeJSON(v)
	}
	var b strings.Builder
	human(&b)
	_, err := io.WriteString(a.Stdout, applyColour(export.Printable(b.String()), a.colourOn()))
	return err
}

// text is user text (a title, owner, actor, phase, label, reason) as human
// output prints it: on one line, with nothing a terminal acts on. It is the
// exports' rule, export.OneLine. Multi-line text (a body) keeps its lines
// through export.Printable instead.
func text(s string) string { return stripMarks(export.OneLine(s)) }

// nameText is a name (owner, actor, assignee, phase, label) as human output
// prints it: export.Name, each character the name rule refuses shown as
// <U+XXXX>, so two names never look the same.
func nameText(s string) string { return stripMarks(export.Name(s)) }

// emitCard prints a card: JSON, or one line led by what happened.
func (a *App) emitCard(c ledger.Card, verb string) error {
	return a.emit(c, func(w io.Writer) { fmt.Fprintf(w, "%s %s\n", verb, a.cardLine(c)) })
}

// cardLine is the one-line human form of a card, led by where it stands
// (see stateWord).
func (a *App) cardLine(c ledger.Card) string {
	var b strings.Builder
	st, _ := a.standingOf(c)
	fmt.Fprintf(&b, "%s [%s]", c.ID, paint(st.State, a.stateWord(c)))
	if c.Status == ledger.StatusClaimed {
		fmt.Fprintf(&b, " by %s epoch %d", nameText(c.ClaimOwner), c.ClaimEpoch)
		if !c.Expired(a.now()) {
			fmt.Fprintf(&b, " %s", a.leaseLeft(c))
		}
	}
	if c.Status == ledger.StatusBlocked && c.BlockedReason != "" {
		fmt.Fprintf(&b, " (%s)", text(c.BlockedReason))
	}
	if c.Assignee != "" {
		fmt.Fprintf(&b, " for %s", nameText(c.Assignee))
	}
	fmt.Fprintf(&b, "  %s", text(c.Title))
	return b.String()
}

// leaseLeft says when a lease runs out, relative to now.
func (a *App) leaseLeft(c ledger.Card) string {
	if c.LeaseExpiresAt == nil {
		return ""
	}
	d := c.LeaseExpiresAt.Sub(a.now())
	if d <= 0 {
		return fmt.Sprintf("(expired %s ago)", roundDur(-d))
	}
	return fmt.Sprintf("(lease %s left)", roundDur(d))
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// table prints cards as aligned columns: STATE is where a card stands
// (ready, waiting, claimed, expired, blocked, done), OWNER#EPOCH the lease
// holder and the epoch it holds, DETAIL what the state waits on or has
// left: "on A1", "until <time>", "9m59s left", "3m ago" (expired).
func (a *App) table(w io.Writer, cards []ledger.Card) { a.tableTree(w, cards, nil) }

// tableTree is table with each card's id indented by its depth in the
// tree (bl list --tree); depth nil for a flat table.
func (a *App) tableTree(w io.Writer, cards []ledger.Card, depth []int) {
	// The ASSIGNEE column shows only when a card in the table has one.
	assigned := slices.ContainsFunc(cards, func(c ledger.Card) bool { return c.Assignee != "" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\t%s\tPRI\tPHASE\t", paint("", "STATE"))
	if assigned {
		fmt.Fprint(tw, "ASSIGNEE\t")
	}
	fmt.Fprint(tw, "OWNER#EPOCH\tDETAIL\tTITLE\n")
	for i, c := range cards {
		st, _ := a.standingOf(c)
		id := c.ID
		if depth != nil && depth[i] > 0 {
			id = strings.Repeat("  ", depth[i]-1) + "└ " + id
		}
		owner := "-"
		if c.Status == ledger.StatusClaimed || (c.Status == ledger.StatusReview && c.ClaimOwner != "") {
			owner = fmt.Sprintf("%s#%d", nameText(c.ClaimOwner), c.ClaimEpoch)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t", id, paint(st.State, st.State), c.Priority, dash(nameText(c.Phase)))
		if assigned {
			fmt.Fprintf(tw, "%s\t", dash(nameText(c.Assignee)))
		}
		detail := a.stateDetail(c, st)
		if st.State == ledger.StateBlocked {
			detail = text(c.BlockedReason) // why it is parked
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", owner, dash(detail), text(c.Title))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
