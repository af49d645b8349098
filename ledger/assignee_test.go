package ledger

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestAssigneeClaims: an assignee is no lease; a claim without an id
// passes over the cards assigned to anyone but its owner, unless it asks
// for any; Mine takes only the owner's; a claim by id takes the card
// whoever it is assigned to.
func TestAssigneeClaims(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Priority, r.Assignee = 9, "bob" })
	e.create("B", func(r *CreateRequest) { r.Priority = 5 })
	if c := e.card("A"); c.Assignee != "bob" || c.Status != StatusReady || c.ClaimOwner != "" {
		t.Fatalf("assigned card: %+v", c)
	}
	claim := func(r ClaimRequest) string {
		t.Helper()
		r.Mutation, r.TTL = m, time.Minute
		c, err := e.b.Claim(e.ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			return ""
		}
		return c.ID
	}
	if got := claim(ClaimRequest{Owner: "w1", Mine: true}); got != "" {
		t.Fatalf("w1 --mine took %s", got)
	}
	if got := claim(ClaimRequest{Owner: "w1"}); got != "B" {
		t.Fatalf("w1 took %q, want B (A is bob's)", got)
	}
	if got := claim(ClaimRequest{Owner: "w1"}); got != "" {
		t.Fatalf("w1 took %q, want nothing", got)
	}
	if got := claim(ClaimRequest{Owner: "bob"}); got != "A" {
		t.Fatalf("bob took %q, want A", got)
	}

	e.create("C", func(r *CreateRequest) { r.Assignee = "carol" })
	if got := claim(ClaimRequest{Owner: "w2", AnyAssignee: true}); got != "C" {
		t.Fatalf("w2 --any took %q, want C", got)
	}
	e.create("D", func(r *CreateRequest) { r.Assignee = "dan" })
	if got := claim(ClaimRequest{Owner: "w3", ID: "D"}); got != "D" {
		t.Fatalf("w3 claim D took %q", got)
	}

	// Unassign and refuse what is no name; a refused update writes nothing.
	if c, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "D", Fields: Fields{Assignee: strp("")}}); err != nil || c.Assignee != "" {
		t.Fatalf("unassign: %+v %v", c, err)
	}
	for _, bad := range []string{"-", " bob", "a\x1bb", string(make([]byte, MaxAuthorLen+1))} {
		e.unchanged(ErrInvalid, func(e *env) error {
			_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "D", Fields: Fields{Assignee: &bad}})
			return err
		})
	}
	// The event is v4: a v3 reader refuses it rather than drop the field.
	ev := e.appendsOne(OpUpdate, func(e *env) error {
		_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "D", Fields: Fields{Assignee: strp("erin")}})
		return err
	})
	if ev.V != 4 {
		t.Fatalf("assign event is v%d, want 4", ev.V)
	}
}

// TestLabelEditsKeepOthers: labels added and removed by handles racing
// on one card are each applied to the card as it is when written, so no
// edit loses another's label (a replace would).
func TestLabelEditsKeepOthers(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Labels = []string{"keep", "drop"} })
	const n = 8
	errs := make(chan error, n+1)
	for i := range n {
		go func() {
			b := e.open()
			defer b.Close()
			_, err := b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", AddLabels: []string{fmt.Sprintf("l%d", i)}})
			errs <- err
		}()
	}
	go func() {
		b := e.open()
		defer b.Close()
		_, err := b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", RemoveLabels: []string{"drop"}})
		errs <- err
	}()
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := e.open().held().Find("A").Labels
	want := []string{"keep"}
	for i := range n {
		want = append(want, fmt.Sprintf("l%d", i))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("labels %v, want %v", got, want)
	}
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", AddLabels: []string{"x"}, Fields: Fields{Labels: &[]string{"y"}}})
		return err
	})
}
