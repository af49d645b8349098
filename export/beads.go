package export

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/internal/importer"
	"github.com/bl-backlog/bl/ledger"
)

// Beads is beads' issues.jsonl, the way back from bl import --from beads.
const Beads Format = "beads"

// beadsTypes are the beads issue types; a card's label that names one is
// its issue_type (bl import --from beads made it a label).
var beadsTypes = []string{"bug", "feature", "task", "epic", "chore"}

type beadsOut struct {
	ID                 string         `json:"id"`
	Title              string         `json:"title"`
	Description        string         `json:"description,omitempty"`
	AcceptanceCriteria string         `json:"acceptance_criteria,omitempty"`
	Status             string         `json:"status"`
	Priority           int            `json:"priority"`
	IssueType          string         `json:"issue_type"`
	Assignee           string         `json:"assignee,omitempty"`
	Labels             []string       `json:"labels,omitempty"`
	Dependencies       []beadsDepOut  `json:"dependencies,omitempty"`
	Comments           []beadsNoteOut `json:"comments,omitempty"`
	CreatedAt          time.Time      `json:"created_at"`
	UpdatedAt          time.Time      `json:"updated_at"`
	ClosedAt           *time.Time     `json:"closed_at,omitempty"`
	CloseReason        string         `json:"close_reason,omitempty"`
}

type beadsDepOut struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
}

type beadsNoteOut struct {
	ID        int       `json:"id"`
	IssueID   string    `json:"issue_id"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// RenderBeads writes one beads issue per line, sorted by id. A card
// imported from beads keeps its beads id; the rest are named by card id.
// Priorities map back as the import mapped them (bl 2..-2 -> beads 0..4),
// statuses ready -> open, claimed -> in_progress, blocked, done -> closed.
func RenderBeads(cards []ledger.Card, _ Options) ([]byte, error) {
	idOf := make(map[string]string, len(cards))
	for _, c := range cards {
		idOf[c.ID] = c.ID
		if k, ok := strings.CutPrefix(c.IdempotencyKey, "beads:"); ok && k != "" {
			idOf[c.ID] = k
		}
	}
	ref := func(id string) string {
		if b, ok := idOf[id]; ok {
			return b
		}
		return id
	}
	out := make([]beadsOut, 0, len(cards))
	for _, c := range cards {
		id := ref(c.ID)
		is := beadsOut{ID: id, Title: c.Title, Description: c.Body, Priority: importer.BeadsPriority(c.Priority),
			IssueType: "task", CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(), ClosedAt: c.ClosedAt, CloseReason: c.CloseNote}
		for _, l := range c.Labels {
			if slices.Contains(beadsTypes, l) && is.IssueType == "task" && l != "task" {
				is.IssueType = l
				continue
			}
			if l != "task" {
				is.Labels = append(is.Labels, l)
			}
		}
		if len(c.Acceptance) > 0 {
			is.AcceptanceCriteria = "- " + strings.Join(c.Acceptance, "\n- ")
		}
		switch c.Status {
		case ledger.StatusReady:
			is.Status = "open"
		case ledger.StatusClaimed:
			is.Status, is.Assignee = "in_progress", c.ClaimOwner
		case ledger.StatusBlocked:
			is.Status = "blocked"
		case ledger.StatusDone:
			is.Status = "closed"
		default:
			is.Status = string(c.Status)
		}
		for _, d := range c.DependsOn {
			is.Dependencies = append(is.Dependencies, beadsDepOut{id, ref(d), "blocks", c.CreatedAt.UTC()})
		}
		if c.Parent != "" {
			is.Dependencies = append(is.Dependencies, beadsDepOut{id, ref(c.Parent), "parent-child", c.CreatedAt.UTC()})
		}
		for i, n := range c.Notes {
			is.Comments = append(is.Comments, beadsNoteOut{i + 1, id, n.Author, n.Text, n.At.UTC()})
		}
		out = append(out, is)
	}
	slices.SortFunc(out, func(a, b beadsOut) int { return strings.Compare(a.ID, b.ID) })
	var buf bytes.Buffer
	for _, is := range out {
		b, err := json.MarshalWithOption(is, json.DisableHTMLEscape())
		if err != nil {
			return nil, fmt.Errorf("card %s: %w", is.ID, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}
