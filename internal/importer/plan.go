package importer

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

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
	ActLink     = "link"
)

// Action is one write of an import, on the card CardID: an existing
// card's id, the source's id with --keep-ids, or else an id derived from
// the item's key (CardIDFor), so a plan names every card before it is
// written and an interrupted import, planned again, names the same ones.
type Action struct {
	Kind     string `json:"action"`
	Key      string `json:"key"`
	SourceID string `json:"source_id"`
	CardID   string `json:"card"`
	// Create and update: the fields to set (update: only those that
	// changed, named in Changed). DependsOn and Parent hold card ids.
	Title      *string    `json:"title,omitempty"`
	Body       *string    `json:"body,omitempty"`
	Phase      *string    `json:"phase,omitempty"`
	Priority   *int       `json:"priority,omitempty"`
	Labels     *[]string  `json:"labels,omitempty"`
	Acceptance *[]string  `json:"acceptance,omitempty"`
	DependsOn  *[]string  `json:"depends_on,omitempty"`
	Parent     *string    `json:"parent,omitempty"`
	Assignee   *string    `json:"assignee,omitempty"`
	CreatedAt  *time.Time `json:"source_created_at,omitempty"`
	UpdatedAt  *time.Time `json:"source_updated_at,omitempty"`
	ClosedAt   *time.Time `json:"source_closed_at,omitempty"`
	Changed    []string   `json:"changed,omitempty"`
	// Transitions, notes and links.
	Text     string     `json:"text,omitempty"`      // note text, close note or block reason
	Author   string     `json:"author,omitempty"`    // who wrote it in the source: a note's author, a create's
	At       *time.Time `json:"source_at,omitempty"` // a note's time in the source
	Owner    string     `json:"owner,omitempty"`     // claim
	LinkType string     `json:"type,omitempty"`      // link
	To       string     `json:"to,omitempty"`        // link: the card at the other end
}

// Options shape a plan.
type Options struct {
	Source string // "beads", "github", "markdown": named in notes
	// KeepIDs makes the source's id the card's id (beads: bd-12; GitHub:
	// gh-7).
	KeepIDs bool
	// ClaimInProgress claims in-progress items for their assignee;
	// otherwise they stay ready.
	ClaimInProgress bool
}

// Cards is what a plan reads of the backlog: a card by its id and by its
// idempotency key, deleted ones included, as a ledger.State reads them
// (StateCards). A plan reads an item's card when it plans the item, so an
// import of 100,000 issues never copies the cards imported before.
type Cards interface {
	Card(id string) (ledger.Card, bool)
	CardByKey(key string) (ledger.Card, bool)
}

// StateCards is s as a plan reads it: each card as bl list shows it now.
func StateCards(s *ledger.State, now time.Time) Cards { return stateCards{s, now} }

type stateCards struct {
	s   *ledger.State
	now time.Time
}

func (sc stateCards) Card(id string) (ledger.Card, bool) {
	c, ok := sc.s.Card(id)
	c.View(sc.now)
	return c, ok
}

func (sc stateCards) CardByKey(key string) (ledger.Card, bool) {
	c, ok := sc.s.CardByKey(key)
	c.View(sc.now)
	return c, ok
}

// Listed is the cards of a list as a plan reads them.
func Listed(cards []ledger.Card) Cards {
	l := listed{byID: map[string]*ledger.Card{}, byKey: map[string]*ledger.Card{}}
	for i := range cards {
		c := &cards[i]
		l.byID[c.ID] = c
		if c.IdempotencyKey != "" {
			l.byKey[c.IdempotencyKey] = c
		}
	}
	return l
}

type listed struct{ byID, byKey map[string]*ledger.Card }

func (l listed) Card(id string) (ledger.Card, bool) { return get(l.byID[id]) }

func (l listed) CardByKey(key string) (ledger.Card, bool) { return get(l.byKey[key]) }

func get(c *ledger.Card) (ledger.Card, bool) {
	if c == nil {
		return ledger.Card{}, false
	}
	return *c, true
}

// live is the card created with key, unless there is none or it was
// deleted.
func live(cards Cards, key string) *ledger.Card {
	if c, ok := cards.CardByKey(key); ok && c.DeletedAt == nil {
		return &c
	}
	return nil
}

// CardIDFor is the id of the card an item with key becomes when the
// source's ids are not kept: "bl-" and 8 base-32 digits of the key's
// hash, the next hash on a clash with taken. Planning again gives the
// same ids, so a resumed import never makes a second card.
func CardIDFor(key string, taken func(id string) bool) string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz" // Crockford base32, as ledger.NewCardID
	for i := 0; ; i++ {
		seed := key
		if i > 0 {
			seed = fmt.Sprintf("%s#%d", key, i)
		}
		h := sha256.Sum256([]byte(seed))
		id := []byte("bl-00000000")
		v := uint64(h[0])<<32 | uint64(h[1])<<24 | uint64(h[2])<<16 | uint64(h[3])<<8 | uint64(h[4])
		for j := len(id) - 1; j >= 3; j-- {
			id[j] = alphabet[v&31]
			v >>= 5
		}
		if !taken(string(id)) {
			return string(id)
		}
	}
}

// Plan returns the writes that bring the backlog holding existing (every
// card, as bl list reads them) in line with items: nothing for items
// imported before and unchanged since. Creates come in dependency order
// (an item after the items it depends on and its parent), each followed
// by its transition and notes; links come last, once both their ends
// exist. What it leaves out is counted in rep. Items come checked
// (unique keys, no cycles), as the readers return them.
func Plan(items []Item, existing []ledger.Card, opts Options, rep *Report) (acts []Action, err error) {
	if rep == nil {
		rep = &Report{}
	}
	cards := Listed(existing)
	p, err := NewPlanner(refs(items), cards, opts)
	if err != nil {
		return nil, err
	}
	var links []Action
	for _, i := range p.Order() {
		a, l := p.Plan(items[i], cards, rep)
		acts, links = append(acts, a...), append(links, l...)
	}
	return append(acts, links...), nil
}

// Planner plans an import item by item: it orders the items and names
// every item's card up front from their Refs, so the items can be
// planned, and their text read, one at a time.
type Planner struct {
	opts Options
	// Every item's card id, by key: the card imported before, or the
	// one its create makes; "" for a card deleted in bl.
	ids   map[string]string
	order []int
}

// NewPlanner orders items and names their cards, reading cards (the
// backlog as it is before the import) for the cards imported before and
// the ids taken. It keeps neither cards nor any card: Plan reads an
// item's card again when it plans the item.
func NewPlanner(items []Ref, cards Cards, opts Options) (*Planner, error) {
	p := &Planner{opts: opts}
	at := make(map[string]int, len(items))
	for i, it := range items {
		at[it.Key] = i
	}
	idx, cyc := order(items, at)
	if cyc != nil {
		return nil, ledger.Errorf(ledger.ErrInvalid, "dependency cycle: %s", strings.Join(cyc, " -> "))
	}
	p.order = idx
	taken := func(id string) bool { _, ok := cards.Card(id); return ok }
	// Every item's card id, known before anything is written.
	p.ids = make(map[string]string, len(items))
	planned := map[string]bool{}
	for _, i := range idx {
		it := items[i]
		c, ok := cards.CardByKey(it.Key)
		switch {
		case ok && c.DeletedAt != nil:
			p.ids[it.Key] = "" // left out; links to it go to a note
			continue
		case ok:
			p.ids[it.Key] = c.ID
		case opts.KeepIDs:
			if err := ledger.ValidID(it.CardID); err != nil {
				return nil, ledger.Errorf(ledger.ErrInvalid, "--keep-ids: %s cannot be a card id: %v", it.CardID, err)
			}
			if taken(it.CardID) {
				return nil, ledger.Errorf(ledger.ErrConflict, "--keep-ids: card %s exists and was not imported from %s; nothing was imported: without --keep-ids its issue gets a new id", it.CardID, it.Key)
			}
			p.ids[it.Key] = it.CardID
		default:
			p.ids[it.Key] = CardIDFor(it.Key, func(id string) bool { return planned[id] || taken(id) })
		}
		planned[p.ids[it.Key]] = true
	}
	return p, nil
}

// PlannerFor is NewPlanner against the backlog b as it is now.
func PlannerFor(b *ledger.Backlog, items []Ref, opts Options) (p *Planner, err error) {
	verr := b.View(func(s *ledger.State, now time.Time) error {
		p, err = NewPlanner(items, StateCards(s, now), opts)
		return nil
	})
	return p, cmp.Or(verr, err)
}

// Order is the indexes of the items in the order they are planned: each
// after the items it depends on and its parent.
func (p *Planner) Order() []int { return p.order }

// id is the card an item refers to by key: an item's of the file, or a
// card imported before from outside it; "" for none (or a deleted one).
func (p *Planner) id(cards Cards, key string) string {
	if id, ok := p.ids[key]; ok {
		return id
	}
	if c := live(cards, key); c != nil {
		return c.ID
	}
	return ""
}

// Plan returns the writes of one item, given whole, in Order: its create
// or update, transition and notes, and apart its links, which are written
// after every item's other writes. cards is the backlog as it stands when
// the item is planned: the import's writes before it touch other cards
// only, so its card (imported before, or none) is as NewPlanner read it.
func (p *Planner) Plan(it Item, cards Cards, rep *Report) (acts, links []Action) {
	opts := p.opts
	id := func(key string) string { return p.id(cards, key) }
	cardID := p.ids[it.Key]
	if cardID == "" {
		rep.LeftOut.Add("issues whose card was deleted in bl: left out (bl restore brings one back)")
		return nil, nil
	}
	// References to items neither in the file nor imported before
	// have no card to point at: they are kept in a note instead.
	var unlinked []string
	deps := make([]string, 0, len(it.DependsOn))
	for _, d := range it.DependsOn {
		if id(d) == "" {
			unlinked = append(unlinked, "blocks "+sourceRef(d))
			continue
		}
		deps = appendNew(deps, id(d))
	}
	parent := ""
	if it.Parent != "" {
		if parent = id(it.Parent); parent == "" {
			unlinked = append(unlinked, "parent "+sourceRef(it.Parent))
		}
	}
	var want []ledger.Link
	for _, l := range it.Links {
		if id(l.To) == "" {
			unlinked = append(unlinked, l.Type+" "+sourceRef(l.To))
			continue
		}
		want = append(want, ledger.Link{Type: l.Type, To: id(l.To)})
	}
	notes := it.Notes
	if len(unlinked) > 0 {
		rep.Kept.AddN("links and parents to issues not imported (outside the file, or skipped) → a note instead", len(unlinked))
		notes = append([]Note{{Text: "links in " + opts.Source + " to issues not imported:\n" + strings.Join(unlinked, "\n")}}, notes...)
	}
	labels := it.Labels
	kept(rep, it.Assignee != "", "assignee → assignee")
	c := live(cards, it.Key)
	if c == nil {
		a := Action{Kind: ActCreate, Key: it.Key, SourceID: it.SourceID, CardID: cardID, Title: ptr(it.Title), Author: it.CreatedBy,
			CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, ClosedAt: it.ClosedAt}
		setIf(&a.Body, it.Body)
		setIf(&a.Phase, it.Phase)
		setIf(&a.Parent, parent)
		setIf(&a.Assignee, it.Assignee)
		if it.Priority != 0 {
			a.Priority = ptr(it.Priority)
		}
		setList(&a.Labels, labels)
		setList(&a.Acceptance, it.Acceptance)
		setList(&a.DependsOn, deps)
		acts = append(acts, a)
		acts = append(acts, newStatus(it, cardID, opts)...)
		for _, n := range notes {
			acts = append(acts, noteAction(it, cardID, n))
		}
		for _, l := range want {
			links = append(links, Action{Kind: ActLink, Key: it.Key, SourceID: it.SourceID, CardID: cardID, LinkType: l.Type, To: l.To})
		}
		return acts, links
	}
	a := Action{Kind: ActUpdate, Key: it.Key, SourceID: it.SourceID, CardID: c.ID}
	change := func(field string, differs bool, set func()) {
		if differs {
			set()
			a.Changed = append(a.Changed, field)
		}
	}
	change("title", c.Title != it.Title, func() { a.Title = ptr(it.Title) })
	change("body", c.Body != it.Body, func() { a.Body = ptr(it.Body) })
	change("phase", c.Phase != it.Phase, func() { a.Phase = ptr(it.Phase) })
	change("priority", c.Priority != it.Priority, func() { a.Priority = ptr(it.Priority) })
	change("labels", !sameSet(c.Labels, labels), func() { a.Labels = ptr(nonNil(labels)) })
	change("acceptance", !sameList(c.Acceptance, it.Acceptance), func() { a.Acceptance = ptr(nonNil(it.Acceptance)) })
	change("depends_on", !sameSet(c.DependsOn, deps), func() { a.DependsOn = ptr(nonNil(deps)) })
	change("parent", c.Parent != parent, func() { a.Parent = ptr(parent) })
	change("assignee", c.Assignee != it.Assignee, func() { a.Assignee = ptr(it.Assignee) })
	change("source_created_at", !sameTime(c.SourceCreatedAt, it.CreatedAt), func() { a.CreatedAt = orZero(it.CreatedAt) })
	change("source_updated_at", !sameTime(c.SourceUpdatedAt, it.UpdatedAt), func() { a.UpdatedAt = orZero(it.UpdatedAt) })
	change("source_closed_at", !sameTime(c.SourceClosedAt, it.ClosedAt), func() { a.ClosedAt = orZero(it.ClosedAt) })
	st := changedStatus(it, c, opts)
	if len(a.Changed) > 0 {
		acts = append(acts, a)
	}
	acts = append(acts, st...)
	for _, n := range newNotes(c.Notes, notes) {
		acts = append(acts, noteAction(it, c.ID, n))
	}
	for _, l := range want {
		if !c.HasLink(l.Type, l.To) {
			links = append(links, Action{Kind: ActLink, Key: it.Key, SourceID: it.SourceID, CardID: c.ID, LinkType: l.Type, To: l.To})
		}
	}
	return acts, links
}

func kept(rep *Report, ok bool, what string) {
	if ok {
		rep.Kept.Add(what)
	}
}

func noteAction(it Item, cardID string, n Note) Action {
	return Action{Kind: ActNote, Key: it.Key, SourceID: it.SourceID, CardID: cardID, Text: n.Text, Author: n.Author, At: n.At}
}

// newNotes are the notes of the source not yet on the card. The import
// writes an item's notes in order, so every note up to the last one the
// card holds is there (the card keeps only its last ledger.MaxNotes; bl
// log keeps all), and each later one is new unless the card has its text.
func newNotes(have []ledger.Note, notes []Note) []Note {
	last := -1
	for i, n := range notes {
		if slices.ContainsFunc(have, func(h ledger.Note) bool { return h.Text == n.Text }) {
			last = i
		}
	}
	var out []Note
	for _, n := range notes[last+1:] {
		if !slices.ContainsFunc(have, func(h ledger.Note) bool { return h.Text == n.Text }) {
			out = append(out, n)
		}
	}
	return out
}

// sourceRef is how a note names a key's item: its id in the source.
func sourceRef(key string) string {
	_, id, ok := strings.Cut(key, ":")
	if !ok {
		return key
	}
	return id
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
		if !opts.ClaimInProgress || it.Assignee == "" {
			return nil
		}
		a.Kind, a.Owner = ActClaim, it.Assignee
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
	case it.Status != ledger.StatusDone && c.Status == ledger.StatusDone && (c.SourceClosedAt != nil || importedNote(c.CloseNote)):
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
	for _, p := range []string{"closed in beads", "closed on GitHub", "checked in "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return strings.HasSuffix(s, " in beads")
}

// Events turns a plan into the ledger events that carry it out, in
// order, for ledger.WriteBatch. ttl is the lease of a claim.
func Events(acts []Action, ttl time.Duration) []*ledger.Event {
	out := make([]*ledger.Event, 0, len(acts))
	for _, a := range acts {
		e := &ledger.Event{Card: a.CardID}
		switch a.Kind {
		case ActCreate, ActUpdate:
			e.Op = ledger.OpUpdate
			f := &ledger.Fields{Title: a.Title, Body: a.Body, Phase: a.Phase, Priority: a.Priority, Labels: a.Labels,
				Acceptance: a.Acceptance, DependsOn: a.DependsOn, Parent: a.Parent, Assignee: a.Assignee,
				SourceCreatedAt: a.CreatedAt, SourceUpdatedAt: a.UpdatedAt, SourceClosedAt: a.ClosedAt}
			if a.Kind == ActCreate {
				e.Op, e.Actor, f.IdempotencyKey = ledger.OpCreate, a.Author, a.Key
			}
			e.Fields = f
		case ActComplete:
			e.Op, e.Reason = ledger.OpComplete, a.Text
		case ActReopen:
			e.Op = ledger.OpReopen
		case ActBlock:
			e.Op, e.Reason = ledger.OpBlock, a.Text
		case ActUnblock:
			e.Op = ledger.OpUnblock
		case ActClaim:
			e.Op, e.Owner, e.TTLSeconds = ledger.OpClaim, a.Owner, int64(ttl/time.Second)
		case ActNote:
			e.Op, e.Text, e.Actor, e.SourceAt = ledger.OpNote, a.Text, a.Author, a.At
		case ActLink:
			e.Op, e.To, e.LinkType = ledger.OpLink, a.To, a.LinkType
		default:
			panic("importer: unknown action " + a.Kind)
		}
		out = append(out, e)
	}
	return out
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

// orZero is t, or the zero time that clears a source time.
func orZero(t *time.Time) *time.Time {
	if t == nil {
		return &time.Time{}
	}
	return t
}

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

func sameList(a, b []string) bool { return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b)) }

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}
