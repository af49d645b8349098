package repair

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// ev builds an event n seconds into a fixed day.
func ev(n int, id, actor string, op wire.Op, card string) *wire.Event {
	return &wire.Event{V: 1, ID: id, At: time.Date(2026, 11, 28, 9, 0, n, 0, time.UTC), Actor: actor, Op: op, Card: card}
}

func title(t string) *wire.Fields { return &wire.Fields{Title: &t} }

func localBut(pushed ...*wire.Event) func(*wire.Event) (bool, error) {
	return func(e *wire.Event) (bool, error) {
		for _, p := range pushed {
			if p.ID == e.ID {
				return false, nil
			}
		}
		return true, nil
	}
}

// Every field that names a card follows the rename; a handoff's to (an
// owner) and text do not.
func TestRenameCollisionsRewritesEveryReference(t *testing.T) {
	theirs := ev(1, "e1", "alice", wire.OpCreate, "A4")
	theirs.Fields = title("alice")
	mine := ev(2, "e2", "bob", wire.OpCreate, "A4")
	mine.Fields = title("bob")
	dep := ev(3, "e3", "bob", wire.OpCreate, "B1")
	parent, deps := "A4", []string{"X", "A4"}
	dep.Fields = &wire.Fields{Title: &parent, Parent: &parent, DependsOn: &deps}
	link := ev(4, "e4", "bob", wire.OpLink, "B1")
	link.To, link.LinkType = "A4", "related"
	hand := ev(5, "e5", "bob", wire.OpHandoff, "A4")
	hand.Owner, hand.To = "bob", "A4" // an owner named like the card
	note := ev(6, "e6", "bob", wire.OpNote, "A4")
	note.Text = "A4 stays A4 in text"
	other := ev(7, "e7", "bob", wire.OpNote, "C1")
	all := []*wire.Event{mine, dep, link, hand, note, other}
	ren, twice, err := renameCollisions([]*wire.Event{theirs}, all, localBut(), nil)
	if err != nil || len(twice) != 0 || len(ren) != 1 {
		t.Fatalf("renamed %v, twice %v, err %v", ren, twice, err)
	}
	to := ren[0].To
	if ren[0].From != "A4" || to != wire.DerivedCardID("e2") || ren[0].Events != 5 {
		t.Fatalf("renamed %+v", ren[0])
	}
	got := fmt.Sprint(all[0].Card, *all[1].Fields.Parent, *all[1].Fields.DependsOn, all[2].To, all[3].Card, all[3].To, all[4].Card, all[4].Text, all[5].Card)
	want := fmt.Sprint(to, to, []string{"X", to}, to, to, "A4", to, "A4 stays A4 in text", "C1")
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if *dep.Fields.Parent != "A4" || (*dep.Fields.DependsOn)[1] != "A4" {
		t.Fatal("the original event was changed in place")
	}
	for i, e := range all {
		if e.ID != []string{"e2", "e3", "e4", "e5", "e6", "e7"}[i] {
			t.Fatalf("event %d lost its id: %s", i, e.ID)
		}
	}
}

// A card whose history already left this clone under its id is refused,
// nothing changed: a claim pushed through a lease ref, or one a claim
// arbiter decided.
func TestRenameCollisionsRefusesWhatLeftTheClone(t *testing.T) {
	theirs := ev(1, "e1", "alice", wire.OpCreate, "A4")
	mine := ev(2, "e2", "bob", wire.OpCreate, "A4")
	claim := ev(3, "e3", "bob", wire.OpClaim, "A4")
	claim.Owner, claim.Epoch, claim.ExpectVersion = "bob", 1, 1
	all := []*wire.Event{mine, claim}
	if _, _, err := renameCollisions([]*wire.Event{theirs, claim}, all, localBut(claim), nil); !errors.Is(err, wire.ErrIDCollision) || !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("pushed claim: %v", err)
	}
	claim.ExpectVersion = 0
	if _, _, err := renameCollisions([]*wire.Event{theirs}, all, localBut(), nil); !errors.Is(err, wire.ErrIDCollision) {
		t.Fatalf("arbiter claim: %v", err)
	}
	if all[0].Card != "A4" || all[1].Card != "A4" {
		t.Fatal("a refused rename changed events")
	}
}

// Both creates already here (a git merge), or ours pushed before theirs
// arrived: named, not renamed.
func TestRenameCollisionsNamesWhatItCannotSplit(t *testing.T) {
	theirs := ev(1, "e1", "alice", wire.OpCreate, "A4")
	mine := ev(2, "e2", "bob", wire.OpCreate, "A4")
	ren, twice, err := renameCollisions([]*wire.Event{theirs}, []*wire.Event{theirs, mine}, localBut(theirs), nil)
	if err != nil || len(ren) != 0 || fmt.Sprint(twice) != "[A4]" {
		t.Fatalf("merged: renamed %v, twice %v, err %v", ren, twice, err)
	}
	ren, twice, err = renameCollisions([]*wire.Event{mine, theirs}, []*wire.Event{mine}, localBut(mine), nil)
	if err != nil || len(ren) != 0 || fmt.Sprint(twice) != "[A4]" {
		t.Fatalf("arrived after ours: renamed %v, twice %v, err %v", ren, twice, err)
	}
}

// Two creates with one idempotency key (bl import of one source on two
// clones) are one card, not a collision.
func TestRenameCollisionsKeepsOneRequest(t *testing.T) {
	theirs := ev(1, "e1", "alice", wire.OpCreate, "GH-7")
	theirs.Fields = &wire.Fields{IdempotencyKey: "github:7"}
	mine := ev(2, "e2", "bob", wire.OpCreate, "GH-7")
	mine.Fields = &wire.Fields{IdempotencyKey: "github:7"}
	ren, twice, err := renameCollisions([]*wire.Event{theirs}, []*wire.Event{mine}, localBut(), nil)
	if err != nil || len(ren) != 0 || len(twice) != 0 || mine.Card != "GH-7" {
		t.Fatalf("renamed %v, twice %v, err %v", ren, twice, err)
	}
	mine.Fields = &wire.Fields{IdempotencyKey: "github:8"}
	if ren, _, _ := renameCollisions([]*wire.Event{theirs}, []*wire.Event{mine}, localBut(), nil); len(ren) != 1 {
		t.Fatalf("another key: renamed %v", ren)
	}
}
