package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// ShowCmd prints one card.
type ShowCmd struct {
	cardID `embed:""`
}

func (ShowCmd) Help() string {
	return `Examples:

    bl show A1
    bl show A1 --json | jq .claim_epoch` + exitCodesHelp
}

func (c *ShowCmd) Run(a *App) error {
	id, err := c.id("show")
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
	return a.emit(card, func(w io.Writer) { a.showCard(w, card) })
}

func (a *App) showCard(w io.Writer, c ledger.Card) {
	fmt.Fprintf(w, "%s  %s\n", c.ID, text(c.Title))
	row := func(k, v string) { fmt.Fprintf(w, "  %-11s %s\n", k, v) }
	status := string(c.Status)
	switch c.Status {
	case ledger.StatusReady:
		if st, _ := a.standingOf(c); st.State == ledger.StateWaiting {
			status += ", " + a.stateWord(c) + " (not claimable yet)"
		} else {
			status += " (claimable)"
		}
	case ledger.StatusClaimed:
		status += fmt.Sprintf(" by %s, epoch %d, since %s %s", text(c.ClaimOwner), c.ClaimEpoch, stamp(c.ClaimedAt), a.leaseLeft(c))
		if c.Expired(a.now()) {
			status += ": claimable"
		}
	case ledger.StatusBlocked:
		status += ": " + dash(text(c.BlockedReason))
	case ledger.StatusDone:
		status += " at " + stamp(c.ClosedAt)
		if c.CloseNote != "" {
			status += ": " + text(c.CloseNote)
		}
	}
	row("status", status)
	row("priority", fmt.Sprint(c.Priority))
	row("phase", dash(text(c.Phase)))
	labels := make([]string, len(c.Labels))
	for i, l := range c.Labels {
		labels[i] = text(l)
	}
	row("labels", dash(strings.Join(labels, ", ")))
	row("depends on", dash(strings.Join(c.DependsOn, ", ")))
	row("parent", dash(c.Parent))
	attempts := fmt.Sprint(c.Attempts)
	if c.MaxAttempts > 0 {
		attempts += fmt.Sprintf(" of %d", c.MaxAttempts)
	}
	row("attempts", attempts)
	if c.DeferUntil != nil {
		row("deferred", "until "+stamp(c.DeferUntil))
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
	if c.IdempotencyKey != "" {
		row("idem. key", text(c.IdempotencyKey))
	}
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
			fmt.Fprintf(w, "    %s  %s\n", stamp(&n.At), text(n.Author))
			for _, l := range strings.Split(stripMarks(export.Printable(n.Text)), "\n") {
				fmt.Fprintf(w, "      %s\n", l)
			}
		}
	}
}
