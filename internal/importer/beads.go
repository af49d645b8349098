package importer

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// beadsIssue is one line of beads' .beads/issues.jsonl.
type beadsIssue struct {
	ID                 string            `json:"id"`
	Title              string            `json:"title"`
	Description        string            `json:"description"`
	Design             string            `json:"design"`
	AcceptanceCriteria string            `json:"acceptance_criteria"`
	Notes              string            `json:"notes"`
	Status             string            `json:"status"`
	Priority           *int              `json:"priority"`
	IssueType          string            `json:"issue_type"`
	Assignee           string            `json:"assignee"`
	Owner              string            `json:"owner"`
	CreatedBy          string            `json:"created_by"`
	Labels             []string          `json:"labels"`
	Dependencies       []beadsDependency `json:"dependencies"`
	Comments           []beadsComment    `json:"comments"`
	Parent             string            `json:"parent"`
	Pinned             bool              `json:"pinned"`
	Ephemeral          bool              `json:"ephemeral"`
	CreatedAt          *time.Time        `json:"created_at"`
	UpdatedAt          *time.Time        `json:"updated_at"`
	ClosedAt           *time.Time        `json:"closed_at"`
	CloseReason        string            `json:"close_reason"`
}

type beadsDependency struct {
	IssueID     string `json:"issue_id"`
	DependsOnID string `json:"depends_on_id"`
	Type        string `json:"type"`
}

type beadsComment struct {
	Author    string     `json:"author"`
	Text      string     `json:"text"`
	CreatedAt *time.Time `json:"created_at"`
}

// beadsMapped are the members of a beads issue that land somewhere in bl
// (beadsIssue's), and beadsDerived those bl recomputes or that only a
// skipped tombstone carries. Any other member is kept in a note.
var (
	beadsMapped = []string{"id", "title", "description", "design", "acceptance_criteria", "notes", "status", "priority",
		"issue_type", "assignee", "owner", "created_by", "labels", "dependencies", "comments", "parent", "pinned",
		"ephemeral", "created_at", "updated_at", "closed_at", "close_reason"}
	beadsDerived = []string{"dependency_count", "dependent_count", "comment_count"}
)

// BeadsKey is the idempotency key of the card a beads issue becomes.
func BeadsKey(id string) string { return "beads:" + id }

// Beads priorities run 0 (most urgent) to 4, 2 by default; bl's run the
// other way (higher = sooner), 0 by default. 2 - p keeps the order and
// lands beads' default on bl's: 0→2, 1→1, 2→0, 3→-1, 4→-2.
func beadsPriority(p *int) int {
	if p == nil {
		return 0
	}
	return 2 - *p
}

// The labels an import gives what bl has no field for; export --format
// beads reads the beads ones back.
const (
	TypeLabel     = export.TypeLabel
	StatusLabel   = export.StatusLabel
	OwnerLabel    = export.OwnerLabel
	AssigneeLabel = "assignee:" // GitHub's assignees past the first
	PinnedLabel   = export.PinnedLabel
)

// beadsLinks maps beads' dependency types to bl link types; blocks-like
// types become depends_on and parent-child the parent. A type not listed
// becomes related (and is counted by name).
var beadsLinks = map[string]string{
	"discovered-from": ledger.LinkDiscoveredFrom,
	"related":         ledger.LinkRelated,
	"relates-to":      ledger.LinkRelated,
	"supersedes":      ledger.LinkSupersedes,
	"duplicates":      ledger.LinkDuplicates,
}

// ReadOptions shape what a reader keeps.
type ReadOptions struct {
	// IncludeEphemeral keeps beads' ephemeral issues (wisps), skipped by
	// default: they are an agent's scratch work, not the backlog's.
	IncludeEphemeral bool
}

// ReadBeads reads beads' issues.jsonl. Tombstones (deleted issues) and,
// unless asked, ephemeral issues are skipped and counted; every other
// member lands in the card or in a note, as rep counts.
func ReadBeads(file string, r io.Reader, opts ReadOptions) ([]Item, *Report, error) {
	rep := &Report{}
	var items []Item
	err := eachLine(file, r, func(line int, _ int64, raw []byte) error {
		it, ok, err := beadsLine(file, line, raw, opts, rep)
		if ok {
			items = append(items, it)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	rep.Kept.First("issues → cards", len(items))
	return items, rep, Check(file, items)
}

// ScanBeads is ReadBeads as a Stream: the file is read once for the
// items' references and the report, and each item again when it is
// planned. size is the file's.
func ScanBeads(file string, r io.ReaderAt, size int64, opts ReadOptions) (*Stream, *Report, error) {
	rep := &Report{}
	s := &Stream{}
	var at []span
	err := eachLine(file, io.NewSectionReader(r, 0, size), func(line int, off int64, raw []byte) error {
		it, ok, err := beadsLine(file, line, raw, opts, rep)
		if ok {
			s.Items = append(s.Items, it.Ref())
			at = append(at, spanOf(line, off, raw))
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	rep.Kept.First("issues → cards", len(s.Items))
	if err := checkRefs(file, s.Items); err != nil {
		return nil, nil, err
	}
	s.load = func(i int) (Item, error) {
		line := int(at[i].line)
		raw, same := at[i].read(r) // the bytes read the first time, by their CRC
		var it Item
		if same {
			var err error
			it, same, err = beadsLine(file, line, raw, opts, &Report{}) // counted on the first read
			same = same && err == nil
		}
		if !same {
			return Item{}, &Error{file, line, "the file changed while it was being imported; import it again"}
		}
		return it, nil
	}
	return s, rep, nil
}

// beadsLine reads one line of issues.jsonl into an item; ok is false for
// a blank line and an issue skipped (counted in rep).
func beadsLine(file string, line int, raw []byte, opts ReadOptions, rep *Report) (it Item, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return it, false, nil
	}
	var is beadsIssue
	if err := json.Unmarshal(raw, &is); err != nil {
		return it, false, &Error{file, line, fmt.Sprintf("not a beads issue: %v", err)}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return it, false, &Error{file, line, fmt.Sprintf("not a beads issue: %v", err)}
	}
	if is.ID == "" {
		return it, false, &Error{file, line, "the issue has no id"}
	}
	if strings.TrimSpace(is.Title) == "" {
		return it, false, &Error{file, line, fmt.Sprintf("issue %s has no title", is.ID)}
	}
	if is.Priority != nil && (*is.Priority < 0 || *is.Priority > 4) {
		return it, false, &Error{file, line, fmt.Sprintf("issue %s has priority %d, not 0..4", is.ID, *is.Priority)}
	}
	if is.Status == "tombstone" {
		rep.LeftOut.Add("tombstones skipped (issues deleted in beads)")
		return it, false, nil
	}
	if is.Ephemeral && !opts.IncludeEphemeral {
		rep.LeftOut.Add("ephemeral issues skipped: --include-ephemeral to keep")
		return it, false, nil
	}
	if it, err = beadsItem(is, members, rep); err != nil {
		return it, false, &Error{file, line, err.Error()}
	}
	it.Line = line
	Fit(&it, rep)
	return it, true, nil
}

func beadsItem(is beadsIssue, members map[string]json.RawMessage, rep *Report) (Item, error) {
	it := Item{Key: BeadsKey(is.ID), SourceID: is.ID, CardID: is.ID, Title: is.Title, Body: is.Description,
		Priority: beadsPriority(is.Priority), Acceptance: splitLines(is.AcceptanceCriteria),
		CreatedAt: is.CreatedAt, UpdatedAt: is.UpdatedAt, CreatedBy: is.CreatedBy}
	kept(rep, is.Description != "", "description → body")
	kept(rep, len(it.Acceptance) > 0, "acceptance_criteria → acceptance, one criterion a line")
	kept(rep, is.Priority != nil, "priority → priority 2−p (0→2, 1→1, 2→0, 3→−1, 4→−2)")
	kept(rep, is.CreatedAt != nil, "created_at → source_created_at")
	kept(rep, is.UpdatedAt != nil, "updated_at → source_updated_at")
	kept(rep, is.CreatedBy != "", "created_by → actor of the create (bl log)")
	beadsText(&it, is, rep)
	beadsStatus(&it, is, rep)
	beadsDependencies(&it, is, rep)
	beadsComments(&it, is, rep)
	beadsRest(&it, members, rep)
	return it, nil
}

// beadsText adds design and notes to the body under their headings, and
// the labels beads' labels, type, owner, pinned and ephemeral give.
func beadsText(it *Item, is beadsIssue, rep *Report) {
	for _, s := range []struct{ head, text, what string }{{"Design", is.Design, "design"}, {"Notes", is.Notes, "notes"}} {
		if strings.TrimSpace(s.text) == "" {
			continue
		}
		if it.Body != "" {
			it.Body += "\n\n"
		}
		it.Body += "## " + s.head + "\n\n" + s.text
		rep.Kept.Add(s.what + " → body, under ## " + s.head)
	}
	for _, l := range is.Labels {
		if strings.TrimSpace(l) != "" {
			it.Labels = appendNew(it.Labels, l)
			rep.Kept.Add("labels → labels")
		}
	}
	switch t := strings.TrimSpace(is.IssueType); t {
	case "", "task":
		kept(rep, t != "", "issue_type task → no label (beads' default)")
	default:
		it.Labels = appendNew(it.Labels, TypeLabel+t)
		rep.Kept.Add("issue_type " + t + " → label " + TypeLabel + t)
	}
	if is.Assignee != "" {
		it.Assignee = is.Assignee
	}
	if is.Owner != "" {
		it.Labels = appendNew(it.Labels, OwnerLabel+is.Owner)
		rep.Kept.Add("owner → label " + OwnerLabel + "NAME")
	}
	if is.Pinned {
		it.Labels = appendNew(it.Labels, PinnedLabel)
		rep.Kept.Add("pinned: true → label " + PinnedLabel)
	}
	if is.Ephemeral {
		it.Labels = appendNew(it.Labels, "ephemeral")
		rep.Kept.Add("ephemeral issues kept (--include-ephemeral) → label ephemeral")
	}
}

// beadsStatus maps beads' status, close reason and close time.
func beadsStatus(it *Item, is beadsIssue, rep *Report) {
	switch is.Status {
	case "", "open":
		it.Status = ledger.StatusReady
		rep.Kept.Add("status open → ready")
	case "in_progress", "hooked":
		it.Status = ledger.StatusClaimed
		it.Labels = appendNew(it.Labels, StatusLabel+is.Status)
		rep.Kept.Add("status " + is.Status + " → ready with label " + StatusLabel + is.Status + " (claimed for the assignee with --claim-in-progress)")
	case "blocked":
		it.Status, it.BlockedReason = ledger.StatusBlocked, "blocked in beads"
		rep.Kept.Add("status blocked → blocked")
	case "deferred", "pinned":
		// Not work to pick up now: held out of the ready queue.
		it.Status, it.BlockedReason = ledger.StatusBlocked, is.Status+" in beads"
		it.Labels = appendNew(it.Labels, StatusLabel+is.Status)
		rep.Kept.Add("status " + is.Status + " → blocked with label " + StatusLabel + is.Status)
	case "closed":
		it.Status, it.CloseNote, it.ClosedAt = ledger.StatusDone, is.CloseReason, is.ClosedAt
		if strings.TrimSpace(it.CloseNote) == "" {
			it.CloseNote = "closed in beads"
		} else {
			rep.Kept.Add("close_reason → close note")
		}
		rep.Kept.Add("status closed → done")
		kept(rep, is.ClosedAt != nil, "closed_at → source_closed_at")
	default:
		it.Status = ledger.StatusReady
		it.Labels = appendNew(it.Labels, StatusLabel+is.Status)
		rep.Kept.Add("status " + is.Status + " → ready with label " + StatusLabel + is.Status)
	}
	if is.Status != "closed" && is.ClosedAt != nil {
		it.ClosedAt = is.ClosedAt
		rep.Kept.Add("closed_at of an issue not closed → source_closed_at")
	}
	if is.Status != "closed" && strings.TrimSpace(is.CloseReason) != "" {
		it.Notes = append(it.Notes, Note{Text: "close reason in beads: " + is.CloseReason})
		rep.Kept.Add("close_reason of an issue not closed → note")
	}
}

// beadsDependencies maps the issue's own dependencies onto depends_on,
// parent and typed links.
func beadsDependencies(it *Item, is beadsIssue, rep *Report) {
	for _, d := range is.Dependencies {
		if d.IssueID != "" && d.IssueID != is.ID {
			continue // recorded on the other issue
		}
		to := BeadsKey(d.DependsOnID)
		switch d.Type {
		case "blocks", "waits-for", "conditional-blocks", "":
			it.DependsOn = appendNew(it.DependsOn, to)
			rep.Kept.Add("dependency " + orBlocks(d.Type) + " → depends_on")
		case "parent-child":
			if it.Parent != "" && it.Parent != to {
				it.Links = append(it.Links, Link{ledger.LinkRelated, to})
				rep.Kept.Add("dependency parent-child past the first → link related")
				continue
			}
			it.Parent = to
			rep.Kept.Add("dependency parent-child → parent")
		default:
			t, ok := beadsLinks[d.Type]
			if !ok {
				t = ledger.LinkRelated
			}
			if !slices.Contains(it.Links, Link{t, to}) {
				it.Links = append(it.Links, Link{t, to})
			}
			rep.Kept.Add("dependency " + d.Type + " → link " + t)
		}
	}
	if it.Parent == "" && is.Parent != "" {
		it.Parent = BeadsKey(is.Parent)
		rep.Kept.Add("parent → parent")
	}
	if n := len(is.Dependencies); n > 0 {
		rep.LeftOut.AddN("dependency created_at, created_by and metadata: not kept (bl log has when the link was made here)", n)
	}
}

// beadsComments keeps each comment as a note with its author and time.
func beadsComments(it *Item, is beadsIssue, rep *Report) {
	for _, c := range is.Comments {
		if strings.TrimSpace(c.Text) == "" {
			rep.LeftOut.Add("empty comments")
			continue
		}
		it.Notes = append(it.Notes, Note{Author: c.Author, Text: c.Text, At: c.CreatedAt})
		rep.Kept.Add("comments → notes, with author and source time")
	}
}

// beadsRest keeps the members bl has no field for in one note, so nothing
// is lost; derived and empty ones are counted as left out.
func beadsRest(it *Item, members map[string]json.RawMessage, rep *Report) {
	// Members bl has no field for: kept in one note, so nothing is lost.
	var rest []string
	for _, k := range slices.Sorted(maps.Keys(members)) {
		switch {
		case slices.Contains(beadsMapped, k):
		case slices.Contains(beadsDerived, k):
			rep.LeftOut.Add(k + ": derived, not kept (bl counts its own)")
		default:
			v := members[k]
			if string(v) == "null" || string(v) == `""` || string(v) == "{}" || string(v) == "[]" {
				rep.LeftOut.Add(k + ": empty, not kept")
				continue
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			rest = append(rest, k+": "+s)
			rep.Kept.Add(k + " → note (bl has no field for it)")
		}
	}
	if len(rest) > 0 {
		it.Notes = append([]Note{{Text: "beads fields bl has no place for:\n" + strings.Join(rest, "\n")}}, it.Notes...)
	}
}

func orBlocks(t string) string {
	if t == "" {
		return "blocks"
	}
	return t
}
