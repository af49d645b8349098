// Package importer reads the exports of other trackers (beads'
// issues.jsonl, GitHub's REST API and gh's --json, a markdown plan) into
// source-neutral items, and plans what writing them to a backlog takes:
// the cards to create, the fields to update, the transitions, links and
// notes to add. Planning is pure; bl import carries the plan out through
// the ledger's batch write.
//
// The source's own id is the idempotency key of the card it becomes
// ("beads:bd-12", "github:https://github.com/o/r/issues/7",
// "markdown:plan.md:M1/parent/title"), so importing the same file again
// plans nothing, and a newer export plans only what changed.
//
// Nothing of the source is dropped silently: every field either lands in
// the card (a field, a label, a link, a note) or is counted in the
// Report, which bl import prints.
package importer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Item is one issue of a source, in bl's terms.
type Item struct {
	Key        string // idempotency key, unique in the source: "beads:bd-12"
	SourceID   string // the id in the source: "bd-12", "#7"
	CardID     string // the card id --keep-ids gives it: "bd-12", "gh-7"
	Line       int    // where it starts in the file
	Title      string
	Body       string
	Phase      string
	Labels     []string
	Acceptance []string
	Priority   int
	// Status is ready, claimed (in progress in the source), blocked or
	// done.
	Status        ledger.Status
	Assignee      string // who the source says works on it
	CreatedBy     string // who wrote it in the source: the create's actor
	BlockedReason string
	CloseNote     string
	DependsOn     []string // keys of the items this one waits for
	Parent        string   // key of the parent item
	Links         []Link   // typed links other than blocks
	Notes         []Note
	// The source's own times; nil when it has none.
	CreatedAt, UpdatedAt, ClosedAt *time.Time
}

// Link is a typed link of an item to another, named by key.
type Link struct {
	Type string // a bl link type (ledger.LinkTypes) other than blocks
	To   string
}

// Note is a comment of the source, kept as a card note.
type Note struct {
	Author string
	Text   string
	At     *time.Time // when the source says it was written
}

// Error is a malformed input: the file and line are named, nothing was
// written.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// CycleError is a dependency cycle in the source, named item by item.
type CycleError struct {
	File  string
	Cycle []string // source ids, the first repeated at the end
}

func (e *CycleError) Error() string {
	return fmt.Sprintf("%s: dependency cycle in the source: %s; break it there and import again", e.File, strings.Join(e.Cycle, " -> "))
}

// Report counts, per field of the source, where its values went: "kept"
// lines say what landed where, "left out" lines what did not and why.
// Readers fill it; Plan adds what it left out.
type Report struct {
	Kept    Tally `json:"kept"`
	LeftOut Tally `json:"left_out"`
}

// Tally is an ordered count of lines such as "assignee → label assignee:NAME".
type Tally struct {
	order []string
	n     map[string]int
}

// Add counts one more of what.
func (t *Tally) Add(what string) { t.AddN(what, 1) }

// AddN counts n more of what.
func (t *Tally) AddN(what string, n int) {
	if n == 0 {
		return
	}
	if t.n == nil {
		t.n = map[string]int{}
	}
	if _, ok := t.n[what]; !ok {
		t.order = append(t.order, what)
	}
	t.n[what] += n
}

// First counts n of what and lists it first.
func (t *Tally) First(what string, n int) {
	t.AddN(what, n)
	if i := slices.Index(t.order, what); i > 0 {
		t.order = slices.Insert(slices.Delete(t.order, i, i+1), 0, what)
	}
}

// Count is how many of what were counted.
func (t *Tally) Count(what string) int { return t.n[what] }

// Lines are the counts as "225 assignee → assignee", in the order first
// counted.
func (t *Tally) Lines() []string {
	out := make([]string, 0, len(t.order))
	for _, w := range t.order {
		out = append(out, fmt.Sprintf("%d %s", t.n[w], w))
	}
	return out
}

// MarshalJSON writes the tally as an object of counts.
func (t Tally) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, w := range t.order {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", quoteJSON(w), t.n[w])
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Ref is what ordering an item and naming its card read of it: its
// references, not its text. A Stream holds its items as Refs.
type Ref struct {
	Key, SourceID, CardID string
	Line                  int
	DependsOn             []string
	Parent                string
}

// Ref is it's references.
func (it *Item) Ref() Ref {
	return Ref{Key: it.Key, SourceID: it.SourceID, CardID: it.CardID, Line: it.Line, DependsOn: it.DependsOn, Parent: it.Parent}
}

func refs(items []Item) []Ref {
	out := make([]Ref, len(items))
	for i := range items {
		out[i] = items[i].Ref()
	}
	return out
}

// Check validates items as a whole: unique keys, and no cycle through
// dependencies and parents. Dependencies on items not in the file are
// left for Plan (they may be cards imported before).
func Check(file string, items []Item) error { return checkRefs(file, refs(items)) }

func checkRefs(file string, items []Ref) error {
	at := make(map[string]int, len(items))
	for i, it := range items {
		if j, ok := at[it.Key]; ok {
			return &Error{file, it.Line, fmt.Sprintf("%s appears twice (first on line %d)", it.SourceID, items[j].Line)}
		}
		at[it.Key] = i
	}
	if _, cyc := order(items, at); cyc != nil {
		ids := make([]string, len(cyc))
		for i, k := range cyc {
			ids[i] = items[at[k]].SourceID
		}
		return &CycleError{file, ids}
	}
	return nil
}

// order returns the indexes of items with every item after the items it
// depends on and its parent, or the keys of a cycle. It keeps the file's
// order where the dependencies allow.
func order(items []Ref, at map[string]int) (out []int, cycle []string) {
	const (
		unseen = iota
		open
		closed
	)
	state := make([]int, len(items))
	var path []string
	var visit func(i int) bool
	visit = func(i int) bool {
		switch state[i] {
		case closed:
			return true
		case open:
			k := items[i].Key
			start := slices.Index(path, k)
			cycle = append(append([]string(nil), path[start:]...), k)
			return false
		}
		state[i] = open
		path = append(path, items[i].Key)
		next := items[i].DependsOn
		if items[i].Parent != "" {
			next = append(slices.Clip(next), items[i].Parent)
		}
		for _, k := range next {
			if j, ok := at[k]; ok && !visit(j) {
				return false
			}
		}
		path = path[:len(path)-1]
		state[i] = closed
		out = append(out, i)
		return true
	}
	for i := range items {
		if !visit(i) {
			return nil, cycle
		}
	}
	return out, nil
}

// splitLines turns a multi-line text (acceptance criteria) into one entry
// per non-empty line, without list markers.
func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		for _, p := range []string{"- [ ] ", "- [x] ", "- [X] ", "- ", "* "} {
			l = strings.TrimPrefix(l, p)
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func appendNew(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}
