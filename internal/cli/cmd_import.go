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
	From             string        `required:"" enum:"beads,github,markdown" placeholder:"SOURCE" help:"The source format: beads (issues.jsonl), github (REST API or gh --json), markdown (a plan with task lists)."`
	File             string        `arg:"" name:"file" help:"The export to read; - reads stdin."`
	DryRun           bool          `name:"dry-run" help:"Check everything the import would write, print it, and write nothing."`
	KeepIDs          bool          `name:"keep-ids" help:"Use the source's ids as card ids (beads: bd-12; GitHub: #7 -> gh-7)."`
	ClaimInProgress  bool          `name:"claim-in-progress" help:"Claim in-progress issues for their assignee (default: leave them ready)."`
	IncludeEphemeral bool          `name:"include-ephemeral" help:"beads: keep ephemeral issues (wisps), skipped by default."`
	TTL              time.Duration `name:"ttl" default:"15m" help:"Lease length of those claims."`
}

func (ImportCmd) Help() string {
	return `Reads another tracker's export and writes it as cards. The source's id is
the card's idempotency key (beads:bd-12, github:URL, markdown:FILE:path),
so importing the same file again writes nothing, and importing a newer
export writes only what changed: fields the source carries are set from it,
closed issues are completed, new comments become notes. A card an import
completed or blocked is reopened or unblocked when the source says so;
one finished or blocked in bl stays so.

Nothing is dropped silently: the summary counts, field by field, where the
source's values went ("kept") and what was not imported and why ("left
out"). The source's created, updated and closed times are kept beside the
ledger's (source_created_at, ...; bl list --sort created sorts by them).
Long text never stops an import: a body over 64 KiB goes on in notes, a
comment over 4 KiB is split across notes in order.

    beads     .beads/issues.jsonl. description (+ design, notes) -> body,
              priority 0..4 -> 2..-2 (same order; higher is sooner in bl),
              labels -> labels, issue_type -> label type:NAME (task: none),
              blocks/waits-for -> depends_on, parent-child -> parent,
              discovered-from, related, supersedes, duplicates -> links
              (other types -> related), comments -> notes (author, time),
              closed -> done (close_reason -> close note), blocked,
              deferred, pinned -> blocked, in_progress and hooked -> ready
              (claimed with --claim-in-progress), tombstones and
              ephemeral issues skipped (--include-ephemeral keeps them).
    github    gh api --paginate repos/O/R/issues > issues.json, or
              gh issue list --state all --limit 100000 \
                --json number,title,body,labels,state,stateReason,assignees,milestone,author,url,comments,createdAt,updatedAt,closedAt
              open -> ready, closed -> done (state reason in the close
              note), labels, milestone -> label milestone:TITLE, comments
              -> notes; pull requests skipped; the URL is the key.
    markdown  task list items ("- [ ] x", "1. [x] x") are cards, checked
              ones done; an item nested in another is its child; the
              heading above (ATX or setext) is the phase. Code blocks are
              not read.

Nothing is written when the file has a malformed line (named with its
line number) or a dependency cycle (named), and the whole import is
checked against the backlog before the first write. It is then written
in batches of whole issues, each all or nothing: an import stopped midway
(killed, the disk full) continues from where it stopped when run again,
and never makes a card twice.

Examples:

    bl import --from beads .beads/issues.jsonl --dry-run
    bl import --from beads .beads/issues.jsonl --keep-ids
    gh api --paginate repos/OWNER/REPO/issues -f state=all > issues.json
    bl import --from github issues.json --keep-ids
    bl import --from markdown PLAN.md` + exitCodesHelp
}

// importResult is what bl import prints with --json.
type importResult struct {
	DryRun    bool              `json:"dry_run"`
	Items     int               `json:"items"`
	Created   int               `json:"created"`
	Updated   int               `json:"updated"`
	Unchanged int               `json:"unchanged"`
	Kept      importer.Tally    `json:"kept"`
	LeftOut   importer.Tally    `json:"left_out"`
	Actions   []importer.Action `json:"actions"`
}

func (c *ImportCmd) Run(a *App) error {
	if c.From == "markdown" && a.ext.ReadMarkdown == nil { // the lean bl
		return a.handover("bl import --from markdown")
	}
	items, rep, err := c.read(a.stdin(), a.ext.ReadMarkdown)
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	existing, err := b.List(ledger.Filter{}, ledger.SortID)
	if err != nil {
		return err
	}
	taken := func(id string) bool { _, err := b.Get(id); return err == nil }
	acts, err := importer.Plan(items, existing, importer.Options{Source: c.From, KeepIDs: c.KeepIDs, ClaimInProgress: c.ClaimInProgress, Taken: taken}, rep)
	if err != nil {
		if !errors.Is(err, ledger.ErrConflict) {
			err = ledger.Errorf(ledger.ErrInvalid, "%v", err)
		}
		return err
	}
	res := importResult{DryRun: c.DryRun, Items: len(items), Actions: acts, Kept: rep.Kept, LeftOut: rep.LeftOut}
	if res.Actions == nil {
		res.Actions = []importer.Action{}
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
	if err := importer.Write(a.ctx, b, a.Mutation(""), acts, c.TTL, c.DryRun); err != nil {
		return err
	}
	return a.emit(res, func(w io.Writer) {
		for _, act := range acts {
			fmt.Fprintln(w, describe(act, c.DryRun))
		}
		for _, t := range []struct {
			head  string
			tally *importer.Tally
		}{{"kept", &rep.Kept}, {"left out", &rep.LeftOut}} {
			if lines := t.tally.Lines(); len(lines) > 0 {
				fmt.Fprintf(w, "%s:\n", t.head)
				for _, l := range lines {
					fmt.Fprintf(w, "  %s\n", text(l))
				}
			}
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
func (c *ImportCmd) read(stdin io.Reader, readMarkdown func(string, io.Reader) ([]importer.Item, *importer.Report, error)) ([]importer.Item, *importer.Report, error) {
	r := stdin
	name := "stdin"
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return nil, nil, ledger.Errorf(ledger.ErrInvalid, "%v", err)
		}
		defer f.Close()
		r, name = f, c.File
	}
	var (
		items []importer.Item
		rep   *importer.Report
		err   error
	)
	switch c.From {
	case "beads":
		items, rep, err = importer.ReadBeads(name, r, importer.ReadOptions{IncludeEphemeral: c.IncludeEphemeral})
	case "github":
		items, rep, err = importer.ReadGithub(name, r)
	case "markdown":
		items, rep, err = readMarkdown(name, r)
	}
	var ie *importer.Error
	var ce *importer.CycleError
	if errors.As(err, &ie) || errors.As(err, &ce) {
		err = ledger.Errorf(ledger.ErrInvalid, "%v (nothing was imported)", err)
	}
	return items, rep, err
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
	case importer.ActLink:
		s = fmt.Sprintf("link   %s from %s: %s %s", who, act.SourceID, act.LinkType, act.To)
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
