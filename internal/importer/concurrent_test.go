package importer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// A card edited in bl by another writer while an import runs, between its
// check and its write: the write writes nothing the check did not report
// (the report is what the import says it did, and what a dry run says it
// would do). Here the check finds card X unchanged; another writer edits X
// while the first batch is written; the second batch must not silently
// set X back.
func TestImportWritesOnlyWhatItsCheckReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".backlog")
	if _, err := ledger.Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := ledger.Open(dir, ledger.Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := ledger.Mutation{Actor: "importer"}
	x := Item{Key: "beads:x", SourceID: "x", Title: "as in beads", Status: ledger.StatusReady}
	imp := func(items []Item, hook func(i int)) (reported []Action, err error) {
		s := Whole(items)
		load := s.load
		s.load = func(i int) (Item, error) { hook(i); return load(i) }
		p, err := PlannerFor(b, s.Items, Options{Source: "beads"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Import(context.Background(), b, m, s, p, &Report{}, time.Minute, false, func(a Action) { reported = append(reported, a) })
		return reported, err
	}
	if _, err := imp([]Item{x}, func(int) {}); err != nil {
		t.Fatal(err)
	}
	var xid string
	_ = b.View(func(s *ledger.State, _ time.Time) error { c, _ := s.CardByKey(x.Key); xid = c.ID; return nil })

	// More new items than one batch holds, then x, unchanged.
	var items []Item
	for i := range Batch + 100 {
		items = append(items, Item{Key: fmt.Sprintf("beads:n%d", i), SourceID: fmt.Sprintf("n%d", i), Title: "new", Status: ledger.StatusReady})
	}
	items = append(items, x)
	other, err := ledger.Open(dir, ledger.Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	loads, edited := 0, false
	reported, err := imp(items, func(i int) {
		loads++
		// The write pass has begun (every item was loaded once by the
		// check): another writer edits x.
		if loads == len(items)+1 && !edited {
			edited = true
			title := "edited in bl"
			if _, err := other.Update(context.Background(), ledger.UpdateRequest{Mutation: ledger.Mutation{Actor: "bob"}, ID: xid, Fields: ledger.Fields{Title: &title}}); err != nil {
				t.Errorf("the other writer: %v", err)
			}
		}
	})
	if !edited {
		t.Fatal("the other writer never ran")
	}
	var title string
	_ = b.View(func(s *ledger.State, _ time.Time) error { c, _ := s.Card(xid); title = c.Title; return nil })
	updated := false
	for _, a := range reported {
		updated = updated || (a.Kind == ActUpdate && a.CardID == xid)
	}
	if title == x.Title && !updated {
		t.Fatalf("the import set %s back to %q without reporting it (import error: %v)", xid, title, err)
	}
}
