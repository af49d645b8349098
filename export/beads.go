package export

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// Beads is beads' issues.jsonl, the way back from bl import --from beads.
const Beads Format = "beads"

// The labels bl import --from beads gives what bl has no field for, which
// the way back reads as beads fields again.
const (
	TypeLabel   = "type:"   // issue_type other than task
	StatusLabel = "status:" // a beads status bl has no status for
	OwnerLabel  = "owner:"  // beads' owner
	PinnedLabel = "pinned"  // beads' pinned flag
)

// BeadsPriority is the beads priority of a bl priority, for the way back:
// the inverse of the import's mapping, held to beads' 0..4.
func BeadsPriority(p int) int { return min(max(2-p, 0), 4) }

type beadsOut struct {
	ID                 string         `json:"id"`
	Title              string         `json:"title"`
	Description        string         `json:"description,omitempty"`
	AcceptanceCriteria string         `json:"acceptance_criteria,omitempty"`
	Status             string         `json:"status"`
	Priority           int            `json:"priority"`
	IssueType          string         `json:"issue_type"`
	Assignee           string         `json:"assignee,omitempty"`
	Owner              string         `json:"owner,omitempty"`
	Labels             []string       `json:"labels,omitempty"`
	Dependencies       []beadsDepOut  `json:"dependencies,omitempty"`
	Comments           []beadsNoteOut `json:"comments,omitempty"`
	Pinned             bool           `json:"pinned,omitempty"`
	Ephemeral          bool           `json:"ephemeral,omitempty"`
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
// statuses ready -> open, claimed -> in_progress, blocked, done -> closed,
// and the labels the import made (type:, status:, owner:, pinned,
// ephemeral) back to their members; typed links to their
// dependency types, the source's times to beads' times, so importing the
// export into a new backlog gives the same cards.
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
		out = append(out, beadsIssue(c, ref))
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

// beadsIssue is one card as a beads issue; ref maps a card id to the
// beads id it goes by.
func beadsIssue(c ledger.Card, ref func(string) string) beadsOut {
	id := ref(c.ID)
	is := beadsOut{ID: id, Title: c.Title, Description: c.Body, Priority: BeadsPriority(c.Priority), Assignee: c.Assignee,
		IssueType: "task", CreatedAt: c.Created().UTC(), UpdatedAt: c.UpdatedAt.UTC(), ClosedAt: c.ClosedAt}
	if c.SourceUpdatedAt != nil {
		is.UpdatedAt = c.SourceUpdatedAt.UTC()
	}
	if c.SourceClosedAt != nil {
		is.ClosedAt = c.SourceClosedAt
	}
	labelStatus := is.takeLabels(c.Labels)
	if len(c.Acceptance) > 0 {
		is.AcceptanceCriteria = "- " + strings.Join(c.Acceptance, "\n- ")
	}
	is.setStatus(c, labelStatus)
	for _, d := range c.DependsOn {
		is.Dependencies = append(is.Dependencies, beadsDepOut{id, ref(d), "blocks", c.CreatedAt.UTC()})
	}
	if c.Parent != "" {
		is.Dependencies = append(is.Dependencies, beadsDepOut{id, ref(c.Parent), "parent-child", c.CreatedAt.UTC()})
	}
	for _, l := range c.Links {
		is.Dependencies = append(is.Dependencies, beadsDepOut{id, ref(l.To), l.Type, c.CreatedAt.UTC()})
	}
	for i, n := range c.Notes {
		at := n.At
		if n.SourceAt != nil {
			at = *n.SourceAt
		}
		is.Comments = append(is.Comments, beadsNoteOut{i + 1, id, n.Author, n.Text, at.UTC()})
	}
	return is
}

// takeLabels turns the labels the import made back into the members they
// came from (type, owner, pinned, ephemeral) and keeps the rest as labels;
// it returns the beads status a status: label names, if any. The import
// adds its labels after the source's: the last label of each prefix is
// the member, any earlier one a label of the source's own.
func (is *beadsOut) takeLabels(labels []string) (status string) {
	last := map[string]int{}
	for i, l := range labels {
		for _, p := range []string{TypeLabel, StatusLabel, OwnerLabel} {
			if strings.HasPrefix(l, p) {
				last[p] = i
			}
		}
	}
	for i, l := range labels {
		member := func(p string) (string, bool) {
			if j, ok := last[p]; ok && j == i {
				return strings.TrimPrefix(l, p), true
			}
			return "", false
		}
		if v, ok := member(TypeLabel); ok {
			is.IssueType = v
		} else if v, ok := member(StatusLabel); ok {
			status = v
		} else if v, ok := member(OwnerLabel); ok {
			is.Owner = v
		} else if l == PinnedLabel {
			is.Pinned = true
		} else if l == "ephemeral" {
			is.Ephemeral = true
		} else {
			is.Labels = append(is.Labels, l)
		}
	}
	return status
}

// setStatus maps the card's status to beads'. A beads status bl has no
// status for (labelStatus) comes back from its label while the card is
// where the import put it.
func (is *beadsOut) setStatus(c ledger.Card, labelStatus string) {
	switch c.Status {
	case ledger.StatusReady:
		is.Status = "open"
	case ledger.StatusClaimed:
		is.Status = "in_progress"
		if is.Assignee == "" {
			is.Assignee = c.ClaimOwner
		}
	case ledger.StatusBlocked:
		is.Status = "blocked"
	case ledger.StatusDone:
		is.Status = "closed"
		if c.CloseNote != "closed in beads" {
			is.CloseReason = c.CloseNote
		}
	default:
		is.Status = string(c.Status)
	}
	if labelStatus != "" && (c.Status == ledger.StatusReady || c.Status == ledger.StatusBlocked || c.Status == ledger.StatusClaimed) {
		is.Status = labelStatus
	}
}
