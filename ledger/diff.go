package ledger

import (
	"bytes"
	"cmp"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// BacklogDiff is what changed between two versions of a backlog (two git
// commits, or a commit and the working files), card by card, for a
// reviewer.
type BacklogDiff struct {
	// Cards that were created, removed, or changed, or had lease activity,
	// sorted by id.
	Cards []CardDiff `json:"cards"`
	// Events only the new version holds, and only the old one: removed
	// events mean a git revert or reset between the two (the ledger is
	// grow-only, so they come back at the next merge that has them).
	EventsAdded   int `json:"events_added"`
	EventsRemoved int `json:"events_removed"`
}

// CardDiff is one card's part of a BacklogDiff.
type CardDiff struct {
	ID    string `json:"id"`
	Title string `json:"title"` // as the new version has it (the old, when removed)
	// Change is "created", "removed" or "changed".
	Change string `json:"change"`
	// Fields lists the fields that differ, old → new: for a created card,
	// what it was created with (old is the zero value); status changes
	// are here too.
	Fields []Change `json:"fields"`
	// Activity is what happened to the card in the events only one
	// version holds, in (at, id) order, except creates, updates, links
	// and heartbeats (those show in Fields and Heartbeats).
	Activity   []Activity `json:"activity"`
	Heartbeats int        `json:"heartbeats"`
}

// Activity is one event in a CardDiff: a claim, completion, release and the
// like, with its owner.
type Activity struct {
	At     time.Time `json:"at"`
	Op     Op        `json:"op"`
	Actor  string    `json:"actor"`
	Owner  string    `json:"owner,omitempty"`
	Epoch  int64     `json:"epoch,omitempty"`
	Reason string    `json:"reason,omitempty"` // a fail's, block's or release's reason, a completion's note
	Text   string    `json:"text,omitempty"`   // a note's text
	// Refused: the fold recorded the event as a conflict and it changed
	// nothing (the losing claim of two clones). Why says what did not
	// hold, and Holder who held the card instead.
	Refused bool   `json:"refused,omitempty"`
	Why     string `json:"why,omitempty"`
	Holder  string `json:"holder,omitempty"`
	// Removed: the old version holds the event and the new one does not.
	Removed bool `json:"removed,omitempty"`
}

// quietOps are the events a CardDiff shows by their effect on the fields
// rather than as activity.
func quietOp(op Op) bool {
	switch op {
	case OpCreate, OpUpdate, OpLink, OpUnlink, OpHeartbeat:
		return true
	}
	return false
}

// DiffTrees compares two versions of a backlog's tracked files: it folds
// each and compares the cards, and compares the two sets of events. Event
// files both versions hold with the same bytes hold the same events on
// both sides: they are not decoded for the comparison (an archive segment
// is decoded only if an event that differs is old enough to be in it), so
// the comparison costs in proportion to what changed.
func DiffTrees(old, new Tree) (*BacklogDiff, error) {
	return DiffUnread(old, new, nil, nil)
}

// DiffUnread is DiffTrees for trees that leave files unread (nil): an
// archive segment unread on both sides is one both hold with the same
// bytes, which adjacent commits are compared without reading. Any other
// comparison reads what it needs through the sides' loaders first.
func DiffUnread(old, new Tree, loadOld, loadNew Loader) (*BacklogDiff, error) {
	if d, ok, err := diffAppended(old, new, loadOld); ok || err != nil {
		return d, err
	}
	if len(old.Unread())+len(new.Unread()) > 0 {
		old, new = maps.Clone(old), maps.Clone(new)
		if err := old.Load(loadOld); err != nil {
			return nil, err
		}
		if err := new.Load(loadNew); err != nil {
			return nil, err
		}
	}
	return diffFull(old, new)
}

// diffFull is DiffTrees for any two versions.
func diffFull(old, new Tree) (*BacklogDiff, error) {
	so, err := store.Tree(old).Fold()
	if err != nil {
		return nil, err
	}
	sn, err := store.Tree(new).Fold()
	if err != nil {
		return nil, err
	}
	shared := Tree{}
	only := func(t, other Tree) Tree {
		out := Tree{}
		for name, data := range t {
			if o, ok := other[name]; ok && bytes.Equal(o, data) && (name == LedgerFile || strings.HasPrefix(name, ArchiveDir+"/")) {
				shared[name] = data
				continue
			}
			out[name] = data
		}
		return out
	}
	eo, err := only(old, new).Events()
	if err != nil {
		return nil, err
	}
	en, err := only(new, old).Events()
	if err != nil {
		return nil, err
	}
	if eo, en, err = dropShared(eo, en, shared); err != nil {
		return nil, err
	}
	return diffStates(so, sn, eo, en), nil
}

// dropShared takes out of eo and en the events only one of them holds but
// a shared file holds too (a line a union merge repeated in another file):
// those are on both sides.
func dropShared(eo, en []*Event, shared Tree) ([]*Event, []*Event, error) {
	inOld := make(map[string]bool, len(eo))
	for _, e := range eo {
		inOld[e.ID] = true
	}
	inNew := make(map[string]bool, len(en))
	for _, e := range en {
		inNew[e.ID] = true
	}
	decoded := map[string]map[string]bool{}
	var derr error
	inShared := func(e *Event) bool {
		for name, data := range shared {
			if name != LedgerFile {
				// A segment holds no event after the one it is named by.
				if c, err := ParseCursor(strings.TrimSuffix(path.Base(name), ".jsonl")); err == nil && !c.IsZero() && c.Before(e) {
					continue
				}
			}
			ids, ok := decoded[name]
			if !ok {
				evs, err := store.DecodeAll(name, data)
				if err != nil && derr == nil {
					derr = err
				}
				ids = make(map[string]bool, len(evs))
				for _, x := range evs {
					ids[x.ID] = true
				}
				decoded[name] = ids
			}
			if ids[e.ID] {
				return true
			}
		}
		return false
	}
	eo = slices.DeleteFunc(eo, func(e *Event) bool { return !inNew[e.ID] && inShared(e) })
	en = slices.DeleteFunc(en, func(e *Event) bool { return !inOld[e.ID] && inShared(e) })
	return eo, en, derr
}

// diffStates compares two folds and the events each holds.
func diffStates(so, sn *fold.State, eo, en []*Event) *BacklogDiff {
	so.All()
	sn.All()
	d := &BacklogDiff{}
	inOld, inNew := eventIDs(eo), eventIDs(en)
	byCard := cardDiffs{}
	// Both lists are in (at, id) order; merge them so the activity is too.
	i, j := 0, 0
	for i < len(eo) || j < len(en) {
		switch {
		case j == len(en) || (i < len(eo) && eo[i].Before(en[j])):
			if e := eo[i]; !inNew[e.ID] {
				d.EventsRemoved++
				addActivity(byCard.get(e.Card), e, so, true)
			}
			i++
		default:
			if e := en[j]; !inOld[e.ID] {
				d.EventsAdded++
				addActivity(byCard.get(e.Card), e, sn, false)
			}
			j++
		}
	}
	lost := byCard.refusedNow(so, sn, inOld, inNew)
	sn.Range(func(cn *Card) bool {
		co := so.Find(cn.ID)
		had := co != nil
		var fields []Change
		if had {
			fields = fold.CardChanges(co, cn, lost[cn.ID])
		} else {
			fields = fold.CardChanges(&Card{}, cn, false)
		}
		if !had || len(fields) > 0 || byCard[cn.ID] != nil {
			cd := byCard.get(cn.ID)
			cd.Title, cd.Fields, cd.Change = cn.Title, nonNilChanges(fields), "changed"
			if !had {
				cd.Change = "created"
			}
		}
		return true
	})
	so.Range(func(co *Card) bool {
		if sn.Find(co.ID) == nil {
			cd := byCard.get(co.ID)
			cd.Title, cd.Change = co.Title, "removed"
		}
		return true
	})
	d.Cards = byCard.sorted()
	return d
}

// eventIDs is the set of the events' ids.
func eventIDs(events []*Event) map[string]bool {
	ids := make(map[string]bool, len(events))
	for _, e := range events {
		ids[e.ID] = true
	}
	return ids
}

// cardDiffs are a diff's cards by id, as they are collected.
type cardDiffs map[string]*CardDiff

func (m cardDiffs) get(id string) *CardDiff {
	cd := m[id]
	if cd == nil {
		cd = &CardDiff{ID: id, Fields: []Change{}, Activity: []Activity{}}
		m[id] = cd
	}
	return cd
}

// refusedNow adds the events both versions hold that only the new one
// refuses: the old version's own claim losing to one the other side holds
// (a merge). Such an event changed the card before and does not now, so
// the lease fields that moved show too: it returns those cards.
func (m cardDiffs) refusedNow(so, sn *fold.State, inOld, inNew map[string]bool) (lost map[string]bool) {
	lost = map[string]bool{}
	for _, c := range sn.Conflicts() {
		if (inNew[c.Event] && !inOld[c.Event]) || c.Event == "" {
			continue // added, shown with the new events
		}
		if _, before := so.ConflictOf(c.Event); before {
			continue
		}
		at, _ := time.Parse(time.RFC3339Nano, c.At)
		if c.Clock != "" {
			at, _ = time.Parse(time.RFC3339Nano, c.Clock)
		}
		cd := m.get(c.Card)
		cd.Activity = append(cd.Activity, Activity{At: at, Op: c.Op, Actor: c.Actor, Owner: c.Owner, Refused: true, Why: c.Reason, Holder: c.Winner})
		slices.SortStableFunc(cd.Activity, func(a, b Activity) int { return a.At.Compare(b.At) })
		lost[c.Card] = true
	}
	return lost
}

// sorted is the cards to show, by id: a card with no change to show but
// its events' (only quiet ones, not even a heartbeat) is left out. Events
// about a card neither version holds show it as changed.
func (m cardDiffs) sorted() []CardDiff {
	cards := []CardDiff{}
	for _, cd := range m {
		if cd.Change == "" {
			cd.Change = "changed"
		}
		if len(cd.Activity) == 0 && len(cd.Fields) == 0 && cd.Heartbeats == 0 && cd.Change == "changed" {
			continue
		}
		cards = append(cards, *cd)
	}
	slices.SortFunc(cards, func(a, b CardDiff) int { return cmp.Compare(a.ID, b.ID) })
	return cards
}

// MergeTrees is what git's union merge (merge=union in
// .backlog/.gitattributes) makes of two versions of a backlog's tracked
// files, without a base: every file either holds, a file both hold with
// different bytes as the lines of both. Settings files (config.json and
// the like) are ours. The result folds as the merged backlog will, for
// bl diff --merge.
func MergeTrees(ours, theirs Tree) Tree {
	out := Tree{}
	for name, data := range ours {
		out[name] = data
	}
	for name, data := range theirs {
		mine, ok := out[name]
		switch {
		case !ok:
			out[name] = data
		case bytes.Equal(mine, data):
		case name == LedgerFile || name == SnapshotFile || strings.HasPrefix(name, ArchiveDir+"/"):
			u := append(append([]byte(nil), mine...), data...)
			if len(mine) > 0 && mine[len(mine)-1] != '\n' {
				u = append(append(append([]byte(nil), mine...), '\n'), data...)
			}
			out[name] = u
		}
	}
	return out
}

// addActivity adds the event e, folded in s, to its card's diff.
func addActivity(d *CardDiff, e *Event, s *fold.State, removed bool) {
	if e.Op == OpHeartbeat {
		if _, refused := s.ConflictOf(e.ID); !refused && !removed {
			d.Heartbeats++
		}
		return
	}
	if quietOp(e.Op) {
		return
	}
	c, refused := s.ConflictOf(e.ID)
	d.Activity = append(d.Activity, Activity{At: e.WriterClock(), Op: e.Op, Actor: e.Actor, Owner: e.Owner, Epoch: e.Epoch,
		Reason: e.Reason, Text: e.Text, Refused: refused, Why: c.Reason, Holder: c.Winner, Removed: removed})
}

// diffAppended is DiffTrees for the common case of adjacent commits: both
// versions hold the same snapshot and archive segments, and the new
// ledger is the old one with events appended after all of its own. The
// snapshot is decoded once, the old ledger folded on it, the copies of
// the cards the new events touch kept, and the new events folded after:
// only those cards are compared. ok is false when the versions are not
// like that. A file unread on both sides is the same on both; load reads
// the old side's unread files if its fold needs them.
func diffAppended(old, new Tree, load Loader) (d *BacklogDiff, ok bool, err error) {
	added, ok, err := appendedTo(old, new)
	if !ok || err != nil {
		return nil, false, err
	}
	s, err := store.Tree(old).FoldWith(load)
	if err != nil {
		return nil, false, err
	}
	return diffAdded(s, added), true, nil
}

// appendedTo is the new ledger's events after the old one's when both
// versions hold the same snapshot and segments and the new ledger is the
// old one with events appended; ok is false otherwise.
func appendedTo(old, new Tree) (added []*Event, ok bool, err error) {
	if !sameSegments(old, new) {
		return nil, false, nil
	}
	return appendedEvents(old, new)
}

// DiffOnSnapshot is DiffUnread for two trees that leave their snapshot
// unread because both hold the same file as the snapshot of the backlog
// in dir (the lean bl's bl diff of adjacent commits checks that by its
// git hash): an append is folded on that file read lazily, as Open reads
// it, decoding only the cards the new events touch; any other comparison
// reads the snapshot through the loaders, as DiffUnread does.
func DiffOnSnapshot(old, new Tree, loadOld, loadNew Loader, dir string) (*BacklogDiff, error) {
	added, ok, err := appendedTo(old, new)
	if err != nil {
		return nil, err
	}
	if !ok {
		return DiffUnread(old, new, loadOld, loadNew)
	}
	s, err := store.Tree(old).FoldOnSnapshot(dir, loadOld)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	d := diffAdded(s, added)
	if err := s.TakeFault(); err != nil {
		return nil, err // a snapshot line that did not read: no answer
	}
	return d, nil
}

// diffAdded is diffAppended's comparison: the events added folded on s,
// the old version's state, and the cards they touch compared.
func diffAdded(s *fold.State, added []*Event) *BacklogDiff {
	before := map[string]*Card{}
	for _, e := range added {
		for _, id := range []string{e.Card, e.To} {
			if _, seen := before[id]; id == "" || seen {
				continue
			}
			before[id] = nil
			if c, had := s.Card(id); had {
				before[id] = &c
			}
		}
	}
	for _, e := range added {
		_, _ = s.FoldEvent(e) // a conflict is recorded in s
	}
	byCard := cardDiffs{}
	for _, e := range added {
		addActivity(byCard.get(e.Card), e, s, false)
	}
	for id, co := range before {
		cn, has := s.Card(id)
		if !has {
			continue
		}
		cd := byCard.get(id)
		cd.Title, cd.Change = cn.Title, "changed"
		if co == nil {
			cd.Change, co = "created", &Card{}
		}
		cd.Fields = nonNilChanges(fold.CardChanges(co, &cn, false))
	}
	return &BacklogDiff{Cards: byCard.sorted(), EventsAdded: len(added)}
}

// sameSegments reports whether both versions hold the same snapshot and
// archive segments.
func sameSegments(old, new Tree) bool {
	for name, data := range old {
		if name == LedgerFile || !(name == SnapshotFile || strings.HasPrefix(name, ArchiveDir+"/")) {
			continue
		}
		if o, has := new[name]; !has || (o == nil) != (data == nil) || !bytes.Equal(o, data) {
			return false
		}
	}
	for name := range new {
		if _, has := old[name]; !has && (name == SnapshotFile || strings.HasPrefix(name, ArchiveDir+"/")) {
			return false
		}
	}
	return true
}

// appendedEvents is the new ledger's events after the old one's; ok is
// false unless the new ledger is the old one with events appended.
func appendedEvents(old, new Tree) (added []*Event, ok bool, err error) {
	lo, ln := old[LedgerFile], new[LedgerFile]
	raw, err := store.DecodeAll(LedgerFile, lo)
	if err != nil {
		return nil, false, err
	}
	eo, err := wire.SettleEvents(raw)
	if err != nil {
		return nil, false, err
	}
	en, err := appendedLines(raw, lo, ln)
	if err != nil || en == nil {
		// Not the old bytes with whole lines after them, or a line that
		// does not read: the new ledger decoded whole, for its errors.
		if en, err = (store.Tree{LedgerFile: ln}).Union(LedgerFile); err != nil {
			return nil, false, err
		}
	}
	inNew := eventIDs(en)
	for _, e := range eo {
		if !inNew[e.ID] {
			return nil, false, nil // removed events: the general comparison
		}
	}
	for i, e := range en[:len(eo)] {
		if e.ID != eo[i].ID {
			return nil, false, nil // not an append
		}
	}
	return en[len(eo):], true, nil
}

// appendedLines is the union of the new ledger's events when its bytes
// are the old ledger's (lo, whose events are raw) with lines after them:
// only those lines are decoded (a line reads the same wherever it starts
// after a line end). nil when the bytes are not so, or those lines do not
// read.
func appendedLines(raw []*Event, lo, ln []byte) ([]*Event, error) {
	tail, ok := bytes.CutPrefix(ln, lo)
	if !ok || (len(lo) > 0 && lo[len(lo)-1] != '\n') {
		return nil, nil
	}
	more, err := store.DecodeAll(LedgerFile, tail)
	if err != nil {
		return nil, nil
	}
	return wire.SettleEvents(append(slices.Clip(raw), more...))
}

func nonNilChanges(c []Change) []Change {
	if c == nil {
		return []Change{}
	}
	return c
}

// FoldSnapshot reads a snapshot file on its own (no ledger, no archives),
// for a reader that has only that file, as git hands it to bl textconv.
func FoldSnapshot(name string, data []byte) (*State, error) {
	s, _, err := store.DecodeSnapshot(name, bytes.NewReader(data), nil)
	if err != nil {
		return nil, err
	}
	return &State{s}, nil
}
