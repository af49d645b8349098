package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bl-backlog/bl/internal/importer"
	"github.com/bl-backlog/bl/ledger"
)

// ImportCmd brings in the issues of another tracker.
type ImportCmd struct {
	From            string        `required:"" enum:"beads,github,markdown" placeholder:"SOURCE" help:"The source format: beads (issues.jsonl), github (gh issue list --json), markdown (a checklist)."`
	File            string        `arg:"" name:"file" help:"The export to read; - reads stdin."`
	DryRun          bool          `name:"dry-run" help:"Print what would be written, and write nothing."`
	KeepIDs         bool          `name:"keep-ids" help:"Use the source's ids as card ids (beads: bd-12)."`
	ClaimInProgress bool          `name:"claim-in-progress" help:"Claim in-progress issues for their assignee (default: leave them ready, with a note)."`
	TTL             time.Duration `name:"ttl" default:"15m" help:"Lease length of those claims."`
}

func (ImportCmd) Help() string {
	return `Reads another tracker's export and writes it as cards. The source's id is
the card's idempotency key (beads:bd-12, github:URL, markdown:FILE:path),
so importing the same file again writes nothing, and importing a newer
export writes only what changed: fields the source carries are set from it,
closed issues are completed, new comments become notes. A card an import
completed or blocked is reopened or unblocked when the source says so;
one finished or blocked in bl stays so.

    beads     .beads/issues.jsonl. description -> body (design appended),
              priority 0..4 -> 2..-2 (same order; higher is sooner in bl),
              labels and issue_type -> labels, acceptance_criteria -> one
              criterion a line, blocks -> depends_on, parent-child ->
              parent, notes and comments -> notes, closed -> done (closed_at
              and close_reason in the close note), blocked and deferred ->
              blocked, in_progress -> ready with a note (or claimed with
              --claim-in-progress), tombstones skipped.
    github    gh issue list --state all --limit 10000 \
                --json number,title,body,labels,state,assignees,url,comments
              OPEN -> ready, CLOSED -> done, labels, comments -> notes (as
              their authors); the URL (repository and number) is the key.
    markdown  "- [ ] title" is a card, "- [x] title" a done card, an item
              indented under another is its child, the heading above is
              the phase.

Nothing is written when the file has a malformed line (named with its
line number) or a dependency cycle (named). The writes go one by one
through the backlog's lock; an import that is interrupted is finished by
running it again.

Examples:

    bl import --from beads .beads/issues.jsonl --dry-run
    bl import --from beads .beads/issues.jsonl --keep-ids
    gh issue list --state all --json number,title,body,labels,state,assignees,url,comments > issues.json
    bl import --from github issues.json
    bl import --from markdown PLAN.md` + exitCodesHelp
}

// importResult is what bl import prints with --json.
type importResult struct {
	DryRun    bool              `json:"dry_run"`
	Created   int               `json:"created"`
	Updated   int               `json:"updated"`
	Unchanged int               `json:"unchanged"`
	Actions   []importer.Action `json:"actions"`
	Warnings  []string          `json:"warnings"`
}

func (c *ImportCmd) Run(a *App) error {
	items, err := c.read(a.stdin())
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	existing, err := b.List(ledger.Filter{}, ledger.SortID)
	if err != nil {
		return err
	}
	acts, warnings, err := importer.Plan(items, existing, importer.Options{Source: c.From, KeepIDs: c.KeepIDs, ClaimInProgress: c.ClaimInProgress})
	if err != nil {
		if !errors.Is(err, ledger.ErrConflict) {
			err = ledger.Errorf(ledger.ErrInvalid, "%v", err)
		}
		return err
	}
	res := importResult{DryRun: c.DryRun, Actions: acts, Warnings: warnings}
	if res.Actions == nil {
		res.Actions = []importer.Action{}
	}
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	touched := map[string]bool{}
	for _, act := range acts {
		switch act.Kind {
		case importer.ActCreate:
			res.Created++
		case importer.ActUpdate:
			res.Updated++
		}
		touched[act.Key] = true
	}
	res.Unchanged = len(items) - len(touched)
	for _, w := range warnings {
		a.Warn(w)
	}
	if !c.DryRun {
		if err := c.apply(a, b, acts); err != nil {
			return err
		}
	}
	return a.emit(res, func(w io.Writer) {
		for _, act := range acts {
			fmt.Fprintln(w, describe(act, c.DryRun))
		}
		verb := "imported"
		if c.DryRun {
			verb = "would import (dry run)"
		}
		fmt.Fprintf(w, "%s %d: %d created, %d updated, %d unchanged\n", verb, len(items), res.Created, res.Updated, res.Unchanged)
	})
}

// read parses the whole file first: a malformed line stops the import
// before anything is written.
func (c *ImportCmd) read(stdin io.Reader) ([]importer.Item, error) {
	r := stdin
	name := "stdin"
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return nil, ledger.Errorf(ledger.ErrInvalid, "%v", err)
		}
		defer f.Close()
		r, name = f, c.File
	}
	var items []importer.Item
	var err error
	switch c.From {
	case "beads":
		items, err = importer.ReadBeads(name, r)
	case "github":
		items, err = importer.ReadGithub(name, r)
	case "markdown":
		items, err = importer.ReadMarkdown(name, r)
	}
	var ie *importer.Error
	var ce *importer.CycleError
	if errors.As(err, &ie) || errors.As(err, &ce) {
		err = ledger.Errorf(ledger.ErrInvalid, "%v (nothing was imported)", err)
	}
	return items, err
}

// apply carries the plan out, in order, through the ledger's API: one
// write per action, each under the lock. Cards created here get their ids
// as they are made.
func (c *ImportCmd) apply(a *App, b *ledger.Backlog, acts []importer.Action) error {
	ids := map[string]string{}
	existing, err := b.List(ledger.Filter{}, ledger.SortID)
	if err != nil {
		return err
	}
	for _, card := range existing {
		if card.IdempotencyKey != "" {
			ids[card.IdempotencyKey] = card.ID
		}
	}
	resolve := func(keys []string) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = ids[k]
		}
		return out
	}
	for _, act := range acts {
		id := ids[act.Key]
		if id == "" {
			id = act.CardID
		}
		m := a.Mutation("")
		var err error
		switch act.Kind {
		case importer.ActCreate:
			req := ledger.CreateRequest{Mutation: m, ID: act.CardID, Title: *act.Title, IdempotencyKey: act.Key}
			req.Body, req.Phase = deref(act.Body), deref(act.Phase)
			if act.Priority != nil {
				req.Priority = *act.Priority
			}
			if act.Labels != nil {
				req.Labels = *act.Labels
			}
			if act.Acceptance != nil {
				req.Acceptance = *act.Acceptance
			}
			if act.DependsOn != nil {
				req.DependsOn = resolve(*act.DependsOn)
			}
			if act.Parent != nil {
				req.Parent = ids[*act.Parent]
			}
			var card ledger.Card
			card, _, err = b.Create(a.ctx, req)
			ids[act.Key] = card.ID
		case importer.ActUpdate:
			f := ledger.Fields{Title: act.Title, Body: act.Body, Phase: act.Phase, Priority: act.Priority, Labels: act.Labels, Acceptance: act.Acceptance}
			if act.DependsOn != nil {
				f.DependsOn = ptrTo(resolve(*act.DependsOn))
			}
			if act.Parent != nil {
				f.Parent = ptrTo(ids[*act.Parent])
			}
			_, err = b.Update(a.ctx, ledger.UpdateRequest{Mutation: m, ID: id, Fields: f})
		case importer.ActComplete:
			_, err = b.Complete(a.ctx, ledger.LeaseRequest{Mutation: m, ID: id, Reason: act.Text})
		case importer.ActReopen:
			_, err = b.Reopen(a.ctx, m, id)
		case importer.ActBlock:
			_, err = b.Block(a.ctx, ledger.LeaseRequest{Mutation: m, ID: id, Reason: act.Text})
		case importer.ActUnblock:
			_, err = b.Unblock(a.ctx, m, id)
		case importer.ActClaim:
			_, err = b.Claim(a.ctx, ledger.ClaimRequest{Mutation: m, Owner: act.Owner, ID: id, TTL: c.TTL})
		case importer.ActNote:
			if act.Author != "" {
				m.Actor = act.Author
			}
			_, err = b.Note(a.ctx, ledger.NoteRequest{Mutation: m, ID: id, Text: act.Text})
		}
		if err != nil {
			return fmt.Errorf("import stopped at %s (%s %s): %w; run it again to finish", act.SourceID, act.Kind, act.Key, err)
		}
	}
	return nil
}

// describe is one line of the human report.
func describe(act importer.Action, dry bool) string {
	who := act.CardID
	if who == "" {
		who = "new card"
	}
	var s string
	switch act.Kind {
	case importer.ActCreate:
		s = fmt.Sprintf("create %s from %s: %s", who, act.SourceID, text(*act.Title))
	case importer.ActUpdate:
		s = fmt.Sprintf("update %s from %s: %s", who, act.SourceID, strings.Join(act.Changed, ", "))
	case importer.ActNote:
		s = fmt.Sprintf("note   %s from %s: %s", who, act.SourceID, text(firstLine(act.Text)))
	case importer.ActClaim:
		s = fmt.Sprintf("claim  %s from %s for %s", who, act.SourceID, text(act.Owner))
	default:
		s = fmt.Sprintf("%s %s from %s", act.Kind, who, act.SourceID)
	}
	if dry {
		s = "would " + s
	}
	return s
}

func firstLine(s string) string {
	line, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if more {
		line += " ..."
	}
	return line
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func ptrTo[T any](v T) *T { return &v }
