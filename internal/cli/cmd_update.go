package cli

import (
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// UpdateCmd edits fields of a card.
type UpdateCmd struct {
	cardID      `embed:""`
	Title       *string  `help:"New title."`
	Body        *string  `help:"New body; - reads it from stdin."`
	Phase       *string  `help:"New phase (\"\" clears it)."`
	Priority    *int     `help:"New priority."`
	Label       []string `placeholder:"LABEL" help:"Replace the labels (repeat or comma-separate)."`
	ClearLabels bool     `name:"clear-labels" help:"Remove all labels."`
	Acceptance  []string `sep:"none" placeholder:"TEXT" help:"Replace the acceptance criteria (repeat for more)."`
	Parent      *string  `placeholder:"ID" help:"New parent (\"\" clears it)."`
	MaxAttempts *int     `name:"max-attempts" help:"New attempts limit (0 = unlimited)."`
	DeferUntil  *string  `name:"defer-until" placeholder:"WHEN" help:"Not claimable before this time (\"\" clears it)."`
	Paths       []string `sep:"none" placeholder:"GLOB" help:"Replace the paths the work touches (repeat for more)."`
	ClearPaths  bool     `name:"clear-paths" help:"Remove all paths."`
	Assignee    *string  `placeholder:"WHO" help:"Who the card is planned for (\"\" or - clears it; see bl assign)."`
	RequestID   string   `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (UpdateCmd) Help() string {
	return `Only the flags given change. Dependencies change with bl link and bl unlink.

Examples:

    bl update A1 --priority 8 --phase M2
    bl update A1 --label backend,db
    bl update A1 --defer-until 2026-12-01` + exitCodesHelp
}

func (c *UpdateCmd) Run(a *App) error {
	id, err := c.id(a, "update")
	if err != nil {
		return err
	}
	if c.Parent != nil && *c.Parent != "" {
		p, err := a.cardNamed(*c.Parent)
		if err != nil {
			return err
		}
		c.Parent = &p
	}
	f := ledger.Fields{Title: c.Title, Phase: c.Phase, Priority: c.Priority, Parent: c.Parent, MaxAttempts: c.MaxAttempts}
	if c.Body != nil {
		body, err := a.readBody(*c.Body)
		if err != nil {
			return err
		}
		f.Body = &body
	}
	if labels := splitList(c.Label); len(labels) > 0 || c.ClearLabels {
		if labels == nil {
			labels = []string{}
		}
		f.Labels = &labels
	}
	if c.Acceptance != nil {
		f.Acceptance = &c.Acceptance
	}
	if c.Assignee != nil {
		f.Assignee = assigneeField(*c.Assignee)
	}
	if len(c.Paths) > 0 || c.ClearPaths {
		paths := append([]string{}, c.Paths...)
		f.Paths = &paths
	}
	if c.DeferUntil != nil {
		var t time.Time // zero clears
		if *c.DeferUntil != "" {
			var err error
			if t, err = parseWhen("defer-until", *c.DeferUntil, a.now()); err != nil {
				return err
			}
		}
		f.DeferUntil = &t
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Update(a.ctx, ledger.UpdateRequest{Mutation: a.Mutation(c.RequestID), ID: id, Fields: f})
	if err != nil {
		return err
	}
	return a.emitCard(card, "updated")
}
