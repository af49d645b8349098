package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// ShowCmd prints one card.
type ShowCmd struct {
	cardID `embed:""`
}

func (ShowCmd) Help() string {
	return `Prints the card, and the conflicts the fold recorded for it: events it
refused, such as the losing claim of two clones merged together, each with
the owner who lost, the owner who held the card instead and the refused
event's own time ("conflicts" in --json, present only when there are any).

Examples:

    bl show A1
    bl show A1 --json | jq .claim_epoch` + exitCodesHelp
}

func (c *ShowCmd) Run(a *App) error {
	id, err := c.id(a, "show")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Get(id)
	if err != nil {
		return err
	}
	conflicts, err := cardConflicts(b, id)
	if err != nil {
		return err
	}
	rel, err := relativesOf(b, card)
	if err != nil {
		return err
	}
	var out any = card
	switch {
	case len(rel.LinkedFrom) > 0 || len(rel.Children) > 0:
		rel.Card, rel.Conflicts = card, conflicts
		out = rel
	case len(conflicts) > 0:
		out = cardWithConflicts{card, conflicts}
	}
	return a.emit(out, func(w io.Writer) {
		a.showCard(w, card)
		a.showRelatives(w, card, rel)
		if len(conflicts) > 0 {
			fmt.Fprintln(w, "  conflicts")
			for _, c := range conflicts {
				fmt.Fprintf(w, "    %s\n", conflictText(c))
			}
		}
	})
}

// cardWithConflicts is bl show --json for a card the fold refused events
// of: the card's fields, then "conflicts". A card without any prints as
// the card alone.
type cardWithConflicts struct {
	ledger.Card
	Conflicts []ledger.Conflict `json:"conflicts"`
}

// cardConflicts returns the conflicts the fold recorded for a card (every
// card's for ""), in fold order.
func cardConflicts(b *ledger.Backlog, id string) ([]ledger.Conflict, error) {
	var out []ledger.Conflict
	err := b.View(func(s *ledger.State, _ time.Time) error {
		for _, c := range s.Conflicts() {
			if id == "" || c.Card == id {
				out = append(out, c)
			}
		}
		return nil
	})
	return out, err
}

// conflictText is the one-line human form of a conflict: when, what, who
// lost to whom, and why. User text goes through text.
func conflictText(c ledger.Conflict) string {
	var b strings.Builder
	b.WriteString(c.At)
	if c.Clock != "" {
		fmt.Fprintf(&b, " (writer's clock %s)", c.Clock)
	}
	fmt.Fprintf(&b, " %s", text(string(c.Op)))
	if c.Owner != "" {
		fmt.Fprintf(&b, " by %s", nameText(c.Owner))
		if c.Actor != c.Owner {
			fmt.Fprintf(&b, " (actor %s)", nameText(c.Actor))
		}
	} else {
		fmt.Fprintf(&b, " by %s", nameText(c.Actor))
	}
	if c.Winner != "" {
		fmt.Fprintf(&b, " lost to %s", nameText(c.Winner))
	}
	fmt.Fprintf(&b, ": %s", text(c.Reason))
	return b.String()
}

func (a *App) showCard(w io.Writer, c ledger.Card) {
	fmt.Fprintf(w, "%s  %s\n", c.ID, text(c.Title))
	row := func(k, v string) { fmt.Fprintf(w, "  %-11s %s\n", k, v) }
	row("status", a.statusLine(c))
	a.workRows(row, c)
	planRows(row, c)
	a.timeRows(row, c)
	writeCardText(w, c)
}

// statusLine is the status row: the status and what it means now (who
// holds the card and how long for, why it waits, how it ended).
func (a *App) statusLine(c ledger.Card) string {
	status := string(c.Status)
	if c.DeletedAt != nil {
		return "deleted (was " + status + ")"
	}
	switch c.Status {
	case ledger.StatusReady:
		if st, _ := a.standingOf(c); st.State == ledger.StateWaiting {
			status += ", " + a.stateWord(c) + " (not claimable yet)"
		} else {
			status += " (claimable)"
		}
	case ledger.StatusClaimed:
		status += fmt.Sprintf(" by %s, epoch %d, since %s %s", nameText(c.ClaimOwner), c.ClaimEpoch, stamp(c.ClaimedAt), a.leaseLeft(c))
		if c.Expired(a.now()) {
			status += ": claimable"
		}
	case ledger.StatusBlocked:
		status += ": " + dash(text(c.BlockedReason))
	case ledger.StatusReview:
		status += ", sent by " + dash(nameText(c.SubmittedBy))
		if c.ClaimOwner != "" && c.LeaseExpiresAt != nil && a.now().Before(*c.LeaseExpiresAt) {
			status += fmt.Sprintf("; under review by %s, epoch %d %s", nameText(c.ClaimOwner), c.ClaimEpoch, a.leaseLeft(c))
		} else {
			status += fmt.Sprintf("; waiting for a reviewer (epoch %d)", c.ClaimEpoch)
		}
		status += closeNote(c)
	case ledger.StatusDone:
		status += " at " + stamp(c.ClosedAt)
		if c.ClosedBy != "" {
			status += " by " + nameText(c.ClosedBy)
		}
		status += closeNote(c)
	}
	return status
}

// closeNote is the note a card was sent to review or closed with, as the
// end of its status line.
func closeNote(c ledger.Card) string {
	if c.CloseNote == "" {
		return ""
	}
	return ": " + text(c.CloseNote)
}

// workRows are the rows about who works on the card and how it went:
// assignee, paths held back, rejection, last failure, paths, branch.
func (a *App) workRows(row func(k, v string), c ledger.Card) {
	if c.Assignee != "" {
		row("assignee", nameText(c.Assignee))
	}
	if st, _ := a.standingOf(c); st.PathsHeldBy != "" {
		row("held back", "paths held by "+st.PathsHeldBy)
	}
	if c.RejectReason != "" {
		row("rejected", text(c.RejectReason))
	}
	if f := c.LastFailure; f != nil {
		past := ""
		if c.Status == ledger.StatusDone || c.Status == ledger.StatusReview {
			past = " (an earlier attempt; a later one finished it)"
		}
		row("last failure", fmt.Sprintf("%s by %s, epoch %d: %s%s", stamp(&f.At), dash(text(f.Owner)), f.Epoch, text(f.Reason), past))
	}
	if len(c.Paths) > 0 {
		row("paths", joinText(c.Paths))
	}
	if c.Branch != "" || c.Commit != "" {
		row("work", strings.TrimSpace(text(c.Branch)+" "+text(c.Commit)))
	}
}

// planRows are the rows the card was planned with: priority, phase,
// labels, deletion, dependencies, parent, attempts.
func planRows(row func(k, v string), c ledger.Card) {
	row("priority", fmt.Sprint(c.Priority))
	row("phase", dash(nameText(c.Phase)))
	row("labels", dash(joinNames(c.Labels)))
	if c.DeletedAt != nil {
		row("deleted", stamp(c.DeletedAt)+" "+dash(text(c.DeleteReason))+" (bl restore "+c.ID+" brings it back)")
	}
	row("depends on", dash(strings.Join(c.DependsOn, ", ")))
	row("parent", dash(c.Parent))
	attempts := fmt.Sprint(c.Attempts)
	if c.MaxAttempts > 0 {
		attempts += fmt.Sprintf(" of %d", c.MaxAttempts)
	}
	row("attempts", attempts)
}

// timeRows are the rows of times and progress, the tracker's times of an
// imported card beside the ledger's, and the idempotency key.
func (a *App) timeRows(row func(k, v string), c ledger.Card) {
	if d := a.deferredRow(c); d != "" {
		row("deferred", d)
	}
	if c.LastHeartbeatAt != nil {
		row("heartbeat", stamp(c.LastHeartbeatAt))
	}
	if c.Progress != nil {
		row("progress", fmt.Sprintf("%d%%", *c.Progress))
	}
	if c.Checkpoint != nil {
		row("checkpoint", text(string(c.Checkpoint)))
	}
	row("created", stamp(&c.CreatedAt))
	row("updated", fmt.Sprintf("%s (version %d)", stamp(&c.UpdatedAt), c.Version))
	for _, t := range []struct {
		name string
		at   *time.Time
	}{{"src created", c.SourceCreatedAt}, {"src updated", c.SourceUpdatedAt}, {"src closed", c.SourceClosedAt}} {
		if t.at != nil {
			row(t.name, stamp(t.at))
		}
	}
	if c.IdempotencyKey != "" {
		row("idem. key", text(c.IdempotencyKey))
	}
}

// writeCardText writes the card's free text under its rows: acceptance
// criteria, description and notes, each line made printable.
func writeCardText(w io.Writer, c ledger.Card) {
	if len(c.Acceptance) > 0 {
		fmt.Fprintln(w, "  acceptance")
		for _, x := range c.Acceptance {
			fmt.Fprintf(w, "    - %s\n", text(x))
		}
	}
	if c.Body != "" {
		fmt.Fprintln(w)
		for _, l := range strings.Split(stripMarks(export.Printable(c.Body)), "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if len(c.Notes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "  notes")
		for _, n := range c.Notes {
			if n.SourceAt != nil {
				fmt.Fprintf(w, "    %s  %s  (written then in its tracker; imported %s)\n", stamp(n.SourceAt), nameText(n.Author), stamp(&n.At))
			} else {
				fmt.Fprintf(w, "    %s  %s\n", stamp(&n.At), nameText(n.Author))
			}
			for _, l := range strings.Split(stripMarks(export.Printable(n.Text)), "\n") {
				fmt.Fprintf(w, "      %s\n", l)
			}
		}
	}
}

// joinNames is names (labels) as nameText shows them, comma-separated.
func joinNames(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = nameText(s)
	}
	return strings.Join(out, ", ")
}

// joinText is user strings made printable, comma-separated.
func joinText(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = text(s)
	}
	return strings.Join(out, ", ")
}

// deferredRow is show's "deferred" line: the time a card is not claimable
// before, marked once it has passed; "" for a card it no longer holds
// back (blocked, in review or done: a stale backoff is no news).
func (a *App) deferredRow(c ledger.Card) string {
	switch {
	case c.DeferUntil == nil, c.Status == ledger.StatusBlocked, c.Status == ledger.StatusReview, c.Status == ledger.StatusDone:
		return ""
	case a.now().Before(*c.DeferUntil):
		return "until " + stamp(c.DeferUntil)
	}
	return "until " + stamp(c.DeferUntil) + " (passed)"
}
