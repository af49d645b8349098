package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/export"

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
(killed, the disk full, another writer changing a card it was about to
write) continues from where it stopped when run again, and never makes a
card twice or writes what its check did not report. A card deleted in bl stays deleted: its
issue is left out, and counted. A beads file is read as a stream (each
issue, and its card if imported before, read again when its batch is
written) and the backlog is compacted once, at the end.

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
	src, rep, done, err := c.read(a.stdin(), a.ext.ReadMarkdown)
	defer done()
	b, err := a.openChecked(err)
	if err != nil {
		return err
	}
	// The planner reads the backlog for the cards imported before and
	// keeps their ids only; each item's card is read again as it is
	// planned, so a resumed import holds no copy of them.
	p, err := importer.PlannerFor(b, src.Items, importer.Options{Source: c.From, KeepIDs: c.KeepIDs,
		ClaimInProgress: c.ClaimInProgress})
	if err != nil {
		return err
	}
	out, err := newImportOutput(a.JSON, c.DryRun)
	if err != nil {
		return err
	}
	defer out.close()
	items := len(src.Items)
	src.Items = nil // the planner has what it needs of them
	touched, err := importer.Import(a.ctx, b, a.Mutation(""), src, p, rep, c.TTL, c.DryRun, out.add)
	if err != nil {
		var ie *importer.Error
		if errors.As(err, &ie) {
			err = ledger.Errorf(ledger.ErrInvalid, "%v", err)
		}
		return err
	}
	if !c.DryRun {
		// One compaction, with the stream and the plan no longer used (the
		// collector frees them): it holds every card. A failure is kept
		// for bl stats, and the next write tries again; what was imported
		// stays.
		_ = b.CompactDue(a.ctx)
	}
	res := importResult{DryRun: c.DryRun, Items: items, Created: out.created, Updated: out.updated,
		Unchanged: items - touched, Kept: rep.Kept, LeftOut: rep.LeftOut}
	return out.print(a, res)
}

// importOutput keeps what bl import prints of each action — the human
// line, or under --json the action — in a temp file as the check plans
// it, and prints it once the import is done: the report of 100,000
// issues is not held in memory (a --json report holds their text).
type importOutput struct {
	f                *os.File
	w                *bufio.Writer
	json, dry        bool
	n                int
	err              error
	created, updated int
}

func newImportOutput(asJSON, dry bool) (*importOutput, error) {
	f, err := os.CreateTemp("", "bl-import-*")
	if err != nil {
		return nil, err
	}
	return &importOutput{f: f, w: bufio.NewWriterSize(f, 64<<10), json: asJSON, dry: dry}, nil
}

func (o *importOutput) close() {
	o.f.Close()
	os.Remove(o.f.Name())
}

// add records one action of the plan.
func (o *importOutput) add(act importer.Action) {
	switch act.Kind {
	case importer.ActCreate:
		o.created++
	case importer.ActUpdate:
		o.updated++
	}
	if o.err != nil {
		return
	}
	if !o.json {
		_, o.err = fmt.Fprintln(o.w, describe(act, o.dry))
		return
	}
	// The members of importResult's actions, as its indented encoding
	// writes them.
	b, err := json.MarshalIndentWithOption(act, "    ", "  ", json.DisableHTMLEscape())
	if err == nil {
		sep := ",\n    "
		if o.n == 0 {
			sep = "\n    "
		}
		_, err = o.w.WriteString(sep)
		if err == nil {
			_, err = o.w.Write(b)
		}
	}
	o.n++
	o.err = err
}

// print writes the report: exactly writeJSON's encoding of res with the
// actions recorded, or the human lines.
func (o *importOutput) print(a *App, res importResult) error {
	if err := o.w.Flush(); err != nil || o.err != nil {
		return cmp.Or(o.err, err)
	}
	if _, err := o.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w := bufio.NewWriterSize(a.Stdout, 64<<10)
	if o.json {
		res.Actions = []importer.Action{}
		head, err := json.MarshalIndentWithOption(res, "", "  ", json.DisableHTMLEscape())
		if err != nil {
			return err
		}
		if o.n > 0 { // the actions go where "[]" was
			head = bytes.TrimSuffix(head, []byte("[]\n}"))
			w.Write(head)
			w.WriteString("[")
			if _, err := io.Copy(w, o.f); err != nil {
				return err
			}
			head = []byte("\n  ]\n}")
		}
		w.Write(head)
		w.WriteString("\n")
		return w.Flush()
	}
	// Human lines pass through Printable and colour as emit passes them;
	// both read a rune at a time, so a line at a time is the same.
	colour := a.colourOn()
	line := func(s string) { w.WriteString(applyColour(export.Printable(s), colour)) }
	r := bufio.NewReaderSize(o.f, 64<<10)
	for {
		l, err := r.ReadString('\n')
		if l != "" {
			line(l)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	for _, t := range []struct {
		head  string
		tally *importer.Tally
	}{{"kept", &res.Kept}, {"left out", &res.LeftOut}} {
		if lines := t.tally.Lines(); len(lines) > 0 {
			line(t.head + ":\n")
			for _, l := range lines {
				line("  " + text(l) + "\n")
			}
		}
	}
	verb := "imported"
	if res.DryRun {
		verb = "would import (dry run)"
	}
	line(fmt.Sprintf("%s %d: %d created, %d updated, %d unchanged\n", verb, res.Items, res.Created, res.Updated, res.Unchanged))
	return w.Flush()
}

// read parses the whole file first: a malformed line stops the import
// before anything is written. A beads file is read as a stream (its items'
// text is read again as each is planned); stdin or a pipe is first copied
// to a temp file for that. done closes and removes what read opened.
func (c *ImportCmd) read(stdin io.Reader, readMarkdown func(string, io.Reader) ([]importer.Item, *importer.Report, error)) (src *importer.Stream, rep *importer.Report, done func(), err error) {
	done = func() {}
	var r io.Reader = stdin
	name := "stdin"
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return nil, nil, done, ledger.Errorf(ledger.ErrInvalid, "%v", err)
		}
		done = func() { f.Close() }
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return nil, nil, done, ledger.Errorf(ledger.ErrInvalid, "%s is a directory: name a file, or - for stdin", c.File)
		}
		r, name = f, c.File
	}
	var items []importer.Item
	switch c.From {
	case "beads":
		var f *os.File
		if f, done, err = seekable(r, done); err != nil {
			return nil, nil, done, err
		}
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			src, rep, err = importer.ScanBeads(name, f, fi.Size(), importer.ReadOptions{IncludeEphemeral: c.IncludeEphemeral})
		}
	case "github":
		items, rep, err = importer.ReadGithub(name, r)
	case "markdown":
		items, rep, err = readMarkdown(name, r)
	}
	if src == nil && err == nil {
		src = importer.Whole(items)
	}
	var ie *importer.Error
	var ce *importer.CycleError
	if errors.As(err, &ie) || errors.As(err, &ce) {
		err = ledger.Errorf(ledger.ErrInvalid, "%v (nothing was imported)", err)
	}
	return src, rep, done, err
}

// seekable is r as a regular file, read twice by a streamed import: r
// itself when it is one, else (stdin, a pipe) a temp copy, removed by the
// done it returns.
func seekable(r io.Reader, done func()) (*os.File, func(), error) {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return f, done, nil
		}
	}
	tmp, err := os.CreateTemp("", "bl-import-*.jsonl")
	if err != nil {
		return nil, done, err
	}
	all := func() { done(); tmp.Close(); os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, r); err != nil {
		return nil, all, ledger.Errorf(ledger.ErrInvalid, "read the input: %v", err)
	}
	return tmp, all, nil
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
		s = fmt.Sprintf("claim  %s from %s for %s", who, act.SourceID, nameText(act.Owner))
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
