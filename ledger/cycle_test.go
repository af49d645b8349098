package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// TestCycleRejection builds chains of dependencies and parents and tries to
// close them. Each attempt is a conflict whose message names the cycle, and
// nothing is appended.
func TestCycleRejection(t *testing.T) {
	cases := []struct {
		name  string
		prep  func(e *env)
		do    func(e *env) error
		cycle string
	}{
		{
			name:  "link two cards",
			prep:  func(e *env) { mustLink(e, "B", "A") },
			do:    doLink("A", "B"),
			cycle: "A → B → A",
		},
		{
			name:  "link closing a long chain",
			prep:  func(e *env) { mustLink(e, "B", "C"); mustLink(e, "C", "D"); mustLink(e, "D", "A") },
			do:    doLink("A", "B"),
			cycle: "A → B → C → D → A",
		},
		{
			name:  "update depends_on",
			prep:  func(e *env) { mustLink(e, "B", "A") },
			do:    doUpdate("A", Fields{DependsOn: strs("C", "B")}),
			cycle: "A → B → A",
		},
		{
			name:  "update depends_on through a chain",
			prep:  func(e *env) { mustLink(e, "C", "B"); mustLink(e, "B", "A") },
			do:    doUpdate("A", Fields{DependsOn: strs("C")}),
			cycle: "A → C → B → A",
		},
		{
			name: "update parent",
			prep: func(e *env) {
				if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "B", Fields: Fields{Parent: strp("A")}}); err != nil {
					e.t.Fatal(err)
				}
			},
			do:    doUpdate("A", Fields{Parent: strp("B")}),
			cycle: "A → B → A",
		},
		{
			name: "update parent through a chain",
			prep: func(e *env) {
				e.create("P1", func(r *CreateRequest) { r.Parent = "A" })
				e.create("P2", func(r *CreateRequest) { r.Parent = "P1" })
			},
			do:    doUpdate("A", Fields{Parent: strp("P2")}),
			cycle: "A → P2 → P1 → A",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, id := range []string{"A", "B", "C", "D"} {
				e.create(id)
			}
			tc.prep(e)
			err := e.unchanged(ErrConflict, tc.do)
			if !strings.Contains(err.Error(), tc.cycle) {
				t.Fatalf("error %q does not name the cycle %q", err, tc.cycle)
			}
		})
	}
}

func mustLink(e *env, from, to string) {
	e.t.Helper()
	if _, err := e.b.Link(e.ctx, m, from, to); err != nil {
		e.t.Fatal(err)
	}
}

// TestSelfReferenceAtCreate: a new card cannot be part of a cycle except
// through itself, which is refused as invalid input.
func TestSelfReferenceAtCreate(t *testing.T) {
	e := newEnv(t)
	e.create("B")
	for _, r := range []CreateRequest{
		{Mutation: m, ID: "A", Title: "a", DependsOn: []string{"B", "A"}},
		{Mutation: m, ID: "A", Title: "a", Parent: "A"},
	} {
		e.unchanged(ErrInvalid, func(e *env) error { _, _, err := e.b.Create(e.ctx, r); return err })
	}
}

// TestDiamondIsNotACycle: shared dependencies are fine.
func TestDiamondIsNotACycle(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"A", "B", "C", "D"} {
		e.create(id)
	}
	mustLink(e, "A", "B")
	mustLink(e, "A", "C")
	mustLink(e, "B", "D")
	mustLink(e, "C", "D")
	if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "D", Fields: Fields{Parent: strp("B")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "B", Fields: Fields{DependsOn: strs("C", "D", "C")}}); err != nil {
		t.Fatal(err)
	}
	if c := e.card("B"); strings.Join(c.DependsOn, ",") != "C,D" {
		t.Fatalf("depends_on not deduplicated: %v", c.DependsOn)
	}
	// Unlinking and relinking the other way round is now fine.
	if _, err := e.b.Unlink(e.ctx, m, "C", "D"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Link(e.ctx, m, "D", "C"); err != nil {
		t.Fatal(err)
	}
	_, err := e.b.Link(e.ctx, m, "C", "A")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "C → A → ") {
		t.Fatalf("link C→A: %v", err)
	}
}

// TestCycleInMergedLedger: a cycle closed by two clones each adding one
// edge is kept out by the fold; the later link is a conflict.
func TestCycleInMergedLedger(t *testing.T) {
	var evs []*Event
	at := t0
	add := func(op Op, card, to string, f *Fields) {
		at = at.Add(1)
		evs = append(evs, &Event{V: 1, ID: at.Format("05.000000000"), At: at, Actor: "a", Op: op, Card: card, To: to, Fields: f})
	}
	add(OpCreate, "A", "", &Fields{Title: strp("a")})
	add(OpCreate, "B", "", &Fields{Title: strp("b")})
	add(OpLink, "A", "B", nil) // clone 1
	add(OpLink, "B", "A", nil) // clone 2
	s := fold.Fold(evs)
	if len(s.Conflicts()) != 1 || !strings.Contains(s.Conflicts()[0].Reason, "B → A → B") {
		t.Fatalf("conflicts = %+v", s.Conflicts())
	}
	if b, _ := s.Card("B"); len(b.DependsOn) != 0 {
		t.Fatalf("B depends on %v", b.DependsOn)
	}
}
