package importer

import (
	"errors"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

func TestCycleThroughParent(t *testing.T) {
	in := `{"id":"p","title":"parent","dependencies":[{"issue_id":"p","depends_on_id":"c","type":"blocks"}]}
{"id":"c","title":"child","dependencies":[{"issue_id":"c","depends_on_id":"p","type":"parent-child"}]}
`
	_, _, err := ReadBeads("x.jsonl", strings.NewReader(in), ReadOptions{})
	var ce *CycleError
	if !errors.As(err, &ce) || strings.Join(ce.Cycle, " ") != "p c p" {
		t.Fatalf("got %v, want the cycle p -> c -> p", err)
	}
}

func TestDuplicateID(t *testing.T) {
	in := "{\"id\":\"a\",\"title\":\"one\"}\n{\"id\":\"a\",\"title\":\"two\"}\n"
	_, _, err := ReadBeads("x.jsonl", strings.NewReader(in), ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "x.jsonl:2: a appears twice (first on line 1)") {
		t.Fatalf("got %v", err)
	}
}

// TestPlanLeavesBLTransitions: a card finished or blocked in bl stays so
// when an older export says open; one the import closed is reopened.
func TestPlanLeavesBLTransitions(t *testing.T) {
	items := []Item{
		{Key: "beads:a", SourceID: "a", Title: "a", Status: ledger.StatusReady},
		{Key: "beads:b", SourceID: "b", Title: "b", Status: ledger.StatusReady},
		{Key: "beads:c", SourceID: "c", Title: "c", Status: ledger.StatusReady},
	}
	existing := []ledger.Card{
		{ID: "A", Title: "a", IdempotencyKey: "beads:a", Status: ledger.StatusDone, CloseNote: "merged in 4f2a"},
		{ID: "B", Title: "b", IdempotencyKey: "beads:b", Status: ledger.StatusDone, CloseNote: "closed in beads"},
		{ID: "C", Title: "c", IdempotencyKey: "beads:c", Status: ledger.StatusBlocked, BlockedReason: "waiting on design"},
	}
	acts, err := Plan(items, existing, Options{Source: "beads"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Kind != ActReopen || acts[0].CardID != "B" {
		t.Fatalf("plan %+v, want only: reopen B", acts)
	}
}
