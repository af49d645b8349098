package importer

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	json "github.com/goccy/go-json"

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
	Labels             []string          `json:"labels"`
	Dependencies       []beadsDependency `json:"dependencies"`
	Comments           []beadsComment    `json:"comments"`
	ClosedAt           *time.Time        `json:"closed_at"`
	CloseReason        string            `json:"close_reason"`
	ExternalRef        *string           `json:"external_ref"`
}

type beadsDependency struct {
	IssueID     string `json:"issue_id"`
	DependsOnID string `json:"depends_on_id"`
	Type        string `json:"type"`
}

type beadsComment struct {
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// BeadsKey is the idempotency key of the card a beads issue becomes.
func BeadsKey(id string) string { return "beads:" + id }

// Beads priorities run 0 (most urgent) to 4, 2 by default; bl's run the
// other way (higher = sooner), 0 by default. 2 - p keeps the order and
// lands beads' default on bl's.
func beadsPriority(p *int) int {
	if p == nil {
		return 0
	}
	return 2 - *p
}

// BeadsPriority is the beads priority of a bl priority, for the way back:
// the inverse of the import's mapping, held to beads' 0..4.
func BeadsPriority(p int) int { return min(max(2-p, 0), 4) }

// ReadBeads reads beads' issues.jsonl. Tombstones (deleted issues) are
// skipped; blocks and waits-for dependencies become depends_on,
// parent-child the parent; other kinds (related, discovered-from) are
// kept as labels' worth of nothing: bl has no place for them yet.
func ReadBeads(file string, r io.Reader) ([]Item, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var items []Item
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var is beadsIssue
		if err := json.Unmarshal(raw, &is); err != nil {
			return nil, &Error{file, line, fmt.Sprintf("not a beads issue: %v", err)}
		}
		if is.ID == "" {
			return nil, &Error{file, line, "the issue has no id"}
		}
		if strings.TrimSpace(is.Title) == "" {
			return nil, &Error{file, line, fmt.Sprintf("issue %s has no title", is.ID)}
		}
		if is.Priority != nil && (*is.Priority < 0 || *is.Priority > 4) {
			return nil, &Error{file, line, fmt.Sprintf("issue %s has priority %d, not 0..4", is.ID, *is.Priority)}
		}
		it := Item{Key: BeadsKey(is.ID), SourceID: is.ID, Line: line, Title: is.Title, Body: is.Description,
			Priority: beadsPriority(is.Priority), Labels: append([]string(nil), is.Labels...), Acceptance: splitLines(is.AcceptanceCriteria)}
		if is.Design != "" {
			if it.Body != "" {
				it.Body += "\n\n"
			}
			it.Body += "## Design\n\n" + is.Design
		}
		if is.IssueType != "" {
			it.Labels = appendNew(it.Labels, is.IssueType)
		}
		switch is.Status {
		case "", "open", "pinned", "hooked":
			it.Status = ledger.StatusReady
		case "in_progress":
			it.Status, it.Owner = ledger.StatusClaimed, is.Assignee
		case "blocked":
			it.Status, it.BlockedReason = ledger.StatusBlocked, "blocked in beads"
		case "deferred":
			it.Status, it.BlockedReason = ledger.StatusBlocked, "deferred in beads"
		case "closed":
			it.Status, it.CloseNote = ledger.StatusDone, beadsCloseNote(is)
		case "tombstone":
			continue
		default:
			return nil, &Error{file, line, fmt.Sprintf("issue %s has status %q, which beads does not define", is.ID, is.Status)}
		}
		for _, d := range is.Dependencies {
			if d.IssueID != "" && d.IssueID != is.ID {
				continue // recorded on the other issue
			}
			switch d.Type {
			case "blocks", "waits-for", "conditional-blocks", "":
				it.DependsOn = appendNew(it.DependsOn, BeadsKey(d.DependsOnID))
			case "parent-child":
				it.Parent = BeadsKey(d.DependsOnID)
			}
		}
		if is.Notes != "" {
			it.Notes = append(it.Notes, Note{Text: is.Notes})
		}
		for _, c := range is.Comments {
			if strings.TrimSpace(c.Text) != "" {
				it.Notes = append(it.Notes, Note{Author: c.Author, Text: c.Text})
			}
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{file, 0, err.Error()}
	}
	return items, check(file, items)
}

func beadsCloseNote(is beadsIssue) string {
	n := "closed in beads"
	if is.ClosedAt != nil {
		n += " at " + is.ClosedAt.UTC().Format(time.RFC3339)
	}
	if is.CloseReason != "" {
		n += ": " + is.CloseReason
	}
	return n
}

func appendNew(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}
