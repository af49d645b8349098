package importer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// The kinds of Action.
const (
	ActCreate   = "create"
	ActUpdate   = "update"
	ActComplete = "complete"
	ActReopen   = "reopen"
	ActBlock    = "block"
	ActUnblock  = "unblock"
	ActClaim    = "claim"
	ActNote     = "note"
)

// Action is one write of an import. Cards are named by the item's key;
// CardID is the card's id when it is known before the write (an existing
// card, or --keep-ids).
type Action struct {
	Kind     string `json:"action"`
	Key      string `json:"key"`
	SourceID string `json:"source_id"`
	CardID   string `json:"card,omitempty"`
	// Create and update: the fields to set (update: only those that
	// changed, named in Changed). DependsOn and Parent hold keys.
	Title      *string   `json:"title,omitempty"`
	Body       *string   `json:"body,omitempty"`
	Phase      *string   `json:"phase,omitempty"`
	Priority   *int      `json:"priority,omitempty"`
	Labels     *[]string `json:"labels,omitempty"`
	Acceptance *[]string `json:"acceptance,omitempty"`
	DependsOn  *[]string `json:"depends_on,omitempty"`
	Parent     *string   `json:"parent,omitempty"`
	Changed    []string  `json:"changed,omitempty"`
	// Transitions and notes.
	Text   string `json:"text,omitempty"`   // note text, close note or block reason
	Author string `json:"author,omitempty"` // a note's author in the source
	Owner  string `json:"owner,omitempty"`  // claim
}

// Options shape a plan.
type Options struct {
	Source string // "beads", "github", "markdown": named in notes
	// KeepIDs makes the source's id the card's id (beads).
	KeepIDs bool
	// ClaimInProgress claims in-progress items for their assignee;
	// otherwise they stay ready with a note saying who had them.
	ClaimInProgress bool
}

// Plan returns the writes that bring the backlog holding existing (every
// card, as bl list reads them) in line with items: nothing for items
// imported before and unchanged since. Warnings name what was left out.
// Items come checked (unique keys, no cycles), as the readers return them.
func Plan(items []Item, existing []ledger.Card, opts Options) (acts []Action, warnings []string, err error) {
	byKey := make(map[string]*ledger.Card)
	byID := make(map[string]*ledger.Card, len(existing))
	for i := range existing {
		c := &existing[i]
		byID[c.ID] = c
		if c.IdempotencyKey != "" {
			byKey[c.IdempotencyKey] = c
		}
	}
	at := make(map[string]int, len(items))
	for i, it := range items {
		at[it.Key] = i
	}
	idx, cyc := order(items, at)
	if cyc != nil {
		return nil, nil, fmt.Errorf("dependency cycle: %s", strings.Join(cyc, " -> "))
	}
	// id is how a plan compares references: the card's id when known,
	// else the key of the card still to create.
	id := func(key string) string {
		if c := byKey[key]; c != nil {
			return c.ID
		}
		if opts.KeepIDs {
			if i, ok := at[key]; ok {
				return items[i].SourceID
			}
		}
		return "new:" + key
	}
	known := func(key string) bool { _, ok := at[key]; return ok || byKey[key] != nil }
	for _, i := range idx {
		it := items[i]
		deps := make([]string, 0, len(it.DependsOn))
		for _, d := range it.DependsOn {
			if !known(d) {
				warnings = append(warnings, fmt.Sprintf("%s: dependency %s is not in the file nor imported before; left out", it.SourceID, strings.TrimPrefix(d, opts.Source+":")))
				continue
			}
			deps = append(deps, d)
		}
		parent := it.Parent
		if parent != "" && !known(parent) {
			warnings = append(warnings, fmt.Sprintf("%s: parent %s is not in the file nor imported before; left out", it.SourceID, strings.TrimPrefix(parent, opts.Source+":")))
			parent = ""
		}
		c := byKey[it.Key]
		if c == nil {
			a := Action{Kind: ActCreate, Key: it.Key, SourceID: it.SourceID, Title: ptr(it.Title)}
			if opts.KeepIDs {
				if err := ledger.ValidID(it.SourceID); err != nil {
					return nil, nil, fmt.Errorf("--keep-ids: %s cannot be a card id: %v", it.SourceID, err)
				}
				if byID[it.SourceID] != nil {
					return nil, nil, ledger.Errorf(ledger.ErrConflict, "--keep-ids: card %s exists and was not imported from %s", it.SourceID, it.Key)
				}
				a.CardID = it.SourceID
			}
			setIf(&a.Body, it.Body)
			setIf(&a.Phase, it.Phase)
			setIf(&a.Parent, parent)
			if it.Priority != 0 {
				a.Priority = ptr(it.Priority)
			}
			setList(&a.Labels, it.Labels)
			setList(&a.Acceptance, it.Acceptance)
			setList(&a.DependsOn, deps)
			acts = append(acts, a)
			acts = append(acts, newStatus(it, a.CardID, opts)...)
			for _, n := range it.Notes {
				acts = append(acts, Action{Kind: ActNote, Key: it.Key, SourceID: it.SourceID, CardID: a.CardID, Text: n.Text, Author: n.Author})
			}
			continue
		}
		a := Action{Kind: ActUpdate, Key: it.Key, SourceID: it.SourceID, CardID: c.ID}
		if c.Title != it.Title {
			a.Title, a.Changed = ptr(it.Title), append(a.Changed, "title")
		}
		if c.Body != it.Body {
			a.Body, a.Changed = ptr(it.Body), append(a.Changed, "body")
		}
		if c.Phase != it.Phase {
			a.Phase, a.Changed = ptr(it.Phase), append(a.Changed, "phase")
		}
		if c.Priority != it.Priority {
			a.Priority, a.Changed = ptr(it.Priority), append(a.Changed, "priority")
		}
		if !sameList(c.Labels, it.Labels) {
			a.Labels, a.Changed = ptr(nonNil(it.Labels)), append(a.Changed, "labels")
		}
		if !sameList(c.Acceptance, it.Acceptance) {
			a.Acceptance, a.Changed = ptr(nonNil(it.Acceptance)), append(a.Changed, "acceptance")
		}
		var depIDs []string
		for _, d := range deps {
			depIDs = append(depIDs, id(d))
		}
		if !sameSet(c.DependsOn, depIDs) {
			a.DependsOn, a.Changed = ptr(nonNil(deps)), append(a.Changed, "depends_on")
		}
		parentID := ""
		if parent != "" {
			parentID = id(parent)
		}
		if c.Parent != parentID {
			a.Parent, a.Changed = ptr(parent), append(a.Changed, "parent")
		}
		if len(a.Changed) > 0 {
			acts = append(acts, a)
		}
		acts = append(acts, changedStatus(it, c, opts)...)
		for _, n := range it.Notes {
			if !slices.ContainsFunc(c.Notes, func(cn ledger.Note) bool { return cn.Text == n.Text }) {
				acts = append(acts, Action{Kind: ActNote, Key: it.Key, SourceID: it.SourceID, CardID: c.ID, Text: n.Text, Author: n.Author})
			}
		}
	}
	return acts, warnings, nil
}

// newStatus is what takes a new card (ready) to the item's status.
func newStatus(it Item, cardID string, opts Options) []Action {
	a := Action{Key: it.Key, SourceID: it.SourceID, CardID: cardID}
	switch it.Status {
	case ledger.StatusDone:
		a.Kind, a.Text = ActComplete, it.CloseNote
	case ledger.StatusBlocked:
		a.Kind, a.Text = ActBlock, it.BlockedReason
	case ledger.StatusClaimed:
		if opts.ClaimInProgress && it.Owner != "" {
			a.Kind, a.Owner = ActClaim, it.Owner
			break
		}
		a.Kind, a.Text = ActNote, "in progress in "+opts.Source+" when imported"
		if it.Owner != "" {
			a.Text += " (assignee " + it.Owner + ")"
		}
	default:
		return nil
	}
	return []Action{a}
}

// changedStatus is the transition a card imported before takes when the
// source's status moved. The import undoes only its own transitions: a
// card done or blocked in bl stays so, whatever an older export says.
func changedStatus(it Item, c *ledger.Card, opts Options) []Action {
	a := Action{Key: it.Key, SourceID: it.SourceID, CardID: c.ID}
	switch {
	case it.Status == ledger.StatusDone && c.Status != ledger.StatusDone:
		a.Kind, a.Text = ActComplete, it.CloseNote
	case it.Status != ledger.StatusDone && c.Status == ledger.StatusDone && importedNote(c.CloseNote):
		a.Kind = ActReopen
	case it.Status == ledger.StatusBlocked && c.Status == ledger.StatusReady:
		a.Kind, a.Text = ActBlock, it.BlockedReason
	case it.Status != ledger.StatusBlocked && c.Status == ledger.StatusBlocked && importedNote(c.BlockedReason):
		a.Kind = ActUnblock
	default:
		return nil
	}
	return []Action{a}
}

// importedNote reports whether a close note or block reason is one an
// import wrote.
func importedNote(s string) bool {
	for _, p := range []string{"closed in beads", "closed on GitHub", "checked in ", "blocked in beads", "deferred in beads"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

func setIf(dst **string, v string) {
	if v != "" {
		*dst = &v
	}
}

func setList(dst **[]string, v []string) {
	if len(v) > 0 {
		*dst = ptr(append([]string(nil), v...))
	}
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func sameList(a, b []string) bool { return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b)) }

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}
