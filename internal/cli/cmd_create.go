package cli

import (
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// CreateCmd adds a card.
type CreateCmd struct {
	TitleArg       []string `arg:"" optional:"" name:"title" help:"What the card is (or --title; words are joined with spaces)."`
	Title          string   `help:"What the card is (or as the argument)."`
	ID             *string  `name:"id" help:"Card id (letters, digits, . _ -; default: generated, e.g. bl-k3x9q2mf)."`
	Body           string   `help:"Longer description; - reads it from stdin."`
	Phase          string   `help:"Board lane, e.g. M1."`
	Priority       int      `help:"Higher is sooner (default 0)."`
	DependsOn      []string `name:"depends-on" placeholder:"ID" help:"Cards this one waits for (repeat or comma-separate)."`
	Parent         string   `placeholder:"ID" help:"Parent card."`
	Label          []string `placeholder:"LABEL" help:"Labels (repeat or comma-separate)."`
	Acceptance     []string `sep:"none" placeholder:"TEXT" help:"An acceptance criterion (repeat for more)."`
	MaxAttempts    int      `name:"max-attempts" help:"Claims allowed before an expired card is blocked (0 = unlimited)."`
	DeferUntil     string   `name:"defer-until" placeholder:"WHEN" help:"Not claimable before this time (RFC 3339, date, or duration from now)."`
	IdempotencyKey string   `name:"idempotency-key" placeholder:"KEY" help:"A repeat with the same key returns the existing card."`
	Paths          []string `sep:"none" placeholder:"GLOB" help:"Files the work touches, a glob such as 'src/lexer/**' (repeat for more): while the card is claimed or in review, no overlapping card is claimed."`
	Assignee       string   `placeholder:"WHO" help:"Who the card is planned for (bl assign): only they take it with a plain claim."`
	RequestID      string   `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry: a replay appends nothing."`
}

func (CreateCmd) Help() string {
	return `Prints the new card. With --idempotency-key, a repeat prints the card the
key created first and appends nothing.

Examples:

    bl create "fix login bug"
    bl create --id A1 --title schema --priority 5
    bl create --id A2 --title service --depends-on A1 --priority 9 --phase M1
    bl create --title "flaky test" --label ci --acceptance "passes 100 runs" --json
    bl create --id A7 --title "lexer: unicode idents" --paths 'src/lexer/**' --paths docs/lexer.md` + exitCodesHelp
}

func (c *CreateCmd) Run(a *App) error {
	if len(c.TitleArg) > 0 {
		if c.Title != "" {
			return usagef("two titles given: one as the argument and one with --title; give one")
		}
		c.Title = strings.Join(c.TitleArg, " ")
	}
	if strings.TrimSpace(c.Title) == "" {
		return usagef(`the title is empty: a card needs a title (bl create "fix login bug")`)
	}
	id, err := idFlag(c.ID)
	if err != nil {
		return err
	}
	body, err := a.readBody(c.Body)
	if err != nil {
		return err
	}
	deps, err := a.cardsNamed(splitList(c.DependsOn))
	if err == nil && c.Parent != "" {
		c.Parent, err = a.cardNamed(c.Parent)
	}
	if err != nil {
		return err
	}
	req := ledger.CreateRequest{
		Mutation: a.Mutation(c.RequestID), ID: id, Title: c.Title, Body: body, Phase: c.Phase,
		Priority: c.Priority, Labels: splitList(c.Label), DependsOn: deps, Parent: c.Parent,
		Acceptance: c.Acceptance, MaxAttempts: c.MaxAttempts, IdempotencyKey: c.IdempotencyKey, Paths: c.Paths,
		Assignee: *assigneeField(c.Assignee),
	}
	if c.DeferUntil != "" {
		if req.DeferUntil, err = parseWhen("defer-until", c.DeferUntil, a.now()); err != nil {
			return err
		}
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, created, err := b.Create(a.ctx, req)
	if err != nil {
		return err
	}
	verb := "created"
	if !created {
		verb = "exists"
	}
	return a.emitCard(card, verb)
}
