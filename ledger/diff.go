package ledger

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"time"
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
// each and compares the cards, and compares the two sets of events.
func DiffTrees(old, new Tree) (*BacklogDiff, error) {
	so, err := old.Fold()
	if err != nil {
		return nil, err
	}
	sn, err := new.Fold()
	if err != nil {
		return nil, err
	}
	eo, err := old.Events()
	if err != nil {
		return nil, err
	}
	en, err := new.Events()
	if err != nil {
		return nil, err
	}
	return diffStates(so, sn, eo, en), nil
}

// diffStates compares two folds and the events each holds.
func diffStates(so, sn *State, eo, en []*Event) *BacklogDiff {
	so.all()
	sn.all()
	d := &BacklogDiff{Cards: []CardDiff{}}
	inOld := make(map[string]bool, len(eo))
	for _, e := range eo {
		inOld[e.ID] = true
	}
	inNew := make(map[string]bool, len(en))
	for _, e := range en {
		inNew[e.ID] = true
	}
	byCard := map[string]*CardDiff{}
	get := func(id string) *CardDiff {
		cd := byCard[id]
		if cd == nil {
			cd = &CardDiff{ID: id, Fields: []Change{}, Activity: []Activity{}}
			byCard[id] = cd
		}
		return cd
	}
	activity := func(e *Event, s *State, removed bool) {
		d := get(e.Card)
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
		d.Activity = append(d.Activity, Activity{At: e.clock(), Op: e.Op, Actor: e.Actor, Owner: e.Owner, Epoch: e.Epoch,
			Reason: e.Reason, Text: e.Text, Refused: refused, Why: c.Reason, Holder: c.Winner, Removed: removed})
	}
	// Both lists are in (at, id) order; merge them so the activity is too.
	i, j := 0, 0
	for i < len(eo) || j < len(en) {
		switch {
		case j == len(en) || (i < len(eo) && eo[i].before(en[j])):
			if e := eo[i]; !inNew[e.ID] {
				d.EventsRemoved++
				activity(e, so, true)
			}
			i++
		default:
			if e := en[j]; !inOld[e.ID] {
				d.EventsAdded++
				activity(e, sn, false)
			}
			j++
		}
	}
	for id, cn := range sn.cards {
		co, had := so.cards[id]
		var fields []Change
		if had {
			fields = CardChanges(co, cn, false)
		} else {
			fields = CardChanges(&Card{}, cn, false)
		}
		if !had || len(fields) > 0 || byCard[id] != nil {
			cd := get(id)
			cd.Title, cd.Fields, cd.Change = cn.Title, nonNilChanges(fields), "changed"
			if !had {
				cd.Change = "created"
			}
		}
	}
	for id, co := range so.cards {
		if _, ok := sn.cards[id]; !ok {
			cd := get(id)
			cd.Title, cd.Change = co.Title, "removed"
		}
	}
	for _, cd := range byCard {
		if cd.Change == "" { // events about a card neither version holds
			cd.Change = "changed"
		}
		if len(cd.Activity) == 0 && len(cd.Fields) == 0 && cd.Heartbeats == 0 && cd.Change == "changed" {
			continue
		}
		d.Cards = append(d.Cards, *cd)
	}
	slices.SortFunc(d.Cards, func(a, b CardDiff) int { return cmp.Compare(a.ID, b.ID) })
	return d
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

func nonNilChanges(c []Change) []Change {
	if c == nil {
		return []Change{}
	}
	return c
}

// FoldSnapshot reads a snapshot file on its own (no ledger, no archives),
// for a reader that has only that file, as git hands it to bl textconv.
func FoldSnapshot(name string, data []byte) (*State, error) {
	s, _, err := decodeSnapshot(name, bytes.NewReader(data), nil)
	return s, err
}
