package ledger

import (
	"fmt"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"reflect"
	"testing"
	"time"
)

// ListEach hands out what List and Standings give, card for card, from
// the snapshot and the ledger tail alike: dependencies, a lapsed lease
// (blocked in the view), done cards, a limit and every sort.
func TestListEachMatchesList(t *testing.T) {
	e := newEnv(t)
	for i := range 40 {
		e.create(fmt.Sprintf("C%02d", i), func(r *CreateRequest) {
			r.Priority, r.Labels = i%4, []string{"l", fmt.Sprint(i % 3)}
			if i%5 == 1 {
				r.DependsOn = []string{fmt.Sprintf("C%02d", i-1)}
			}
			if i == 7 {
				r.MaxAttempts = 1
			}
		})
	}
	e.claim("C07", "w", time.Minute)
	e.claim("C03", "w", time.Hour)
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "C03", Owner: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.create("T1", func(r *CreateRequest) { r.DependsOn = []string{"C00"} }) // in the tail only
	e.clk.Advance(2 * time.Minute)                                           // C07's lease lapses

	b := e.open() // read through the snapshot index
	if c, _ := b.Get("C07"); c.Status != StatusBlocked {
		t.Fatalf("C07 is %s, not blocked by its lapsed lease", c.Status)
	}
	for _, tc := range []struct {
		f    Filter
		sort string
	}{{Filter{}, ""}, {Filter{}, SortID}, {Filter{}, "created"}, {Filter{Limit: 7}, "updated"}, {Filter{Label: "1"}, ""}, {Filter{Ready: true}, ""}} {
		want, err := b.List(tc.f, tc.sort)
		if err != nil {
			t.Fatal(err)
		}
		wantSt, err := b.Standings(want)
		if err != nil {
			t.Fatal(err)
		}
		var got []Card
		var gotSt []Standing
		if err := b.ListEach(tc.f, tc.sort, func(c *Card, st Standing) error {
			got, gotSt = append(got, c.Clone()), append(gotSt, st)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotSt, wantSt) {
			t.Errorf("%+v sort %q:\n ListEach %v\n      %v\n List     %v\n      %v", tc.f, tc.sort, ids(got), gotSt, ids(want), wantSt)
		}
	}
	if err := b.ListEach(Filter{}, "nope", func(*Card, Standing) error { return nil }); err == nil {
		t.Error("ListEach took an unknown sort")
	}
}

// Listing every card copies none of them: bl list --json of 100k cards
// must not hold the list twice.
func TestListEachCopiesNoCard(t *testing.T) {
	e := newEnv(t)
	const n = 300
	for i := range n {
		e.create(fmt.Sprintf("C%03d", i), func(r *CreateRequest) { r.Labels = []string{"a", "b"}; r.Acceptance = []string{"x"} })
	}
	seen := 0
	allocs := testing.AllocsPerRun(3, func() {
		seen = 0
		if err := e.b.ListEach(Filter{}, "", func(*Card, Standing) error { seen++; return nil }); err != nil {
			t.Fatal(err)
		}
	})
	if seen != n {
		t.Fatalf("ListEach gave %d cards of %d", seen, n)
	}
	if allocs > n/10 {
		t.Errorf("listing %d cards made %.0f allocations", n, allocs)
	}
}

// A fill that lets the snapshot's pages go as it reads, and copies each
// line into one reused buffer, reads every card all the same: nothing
// decoded points into the buffer (bl list of 100k cards: 31 MB of pages
// and 30 MB of copies).
func TestFillReleasingPagesReadsEveryCard(t *testing.T) {
	e := newEnv(t)
	for i := range 200 {
		e.create(fmt.Sprintf("C%03d", i), func(r *CreateRequest) {
			r.Body, r.Labels, r.Acceptance = fmt.Sprintf("body %d %0300d", i, i), []string{"l" + fmt.Sprint(i)}, []string{"a\u00e9" + fmt.Sprint(i)}
		})
	}
	for _, id := range []string{"C001", "C100", "C199"} { // a checkpoint, a note, a progress
		c := e.claim(id, "w", time.Hour)
		if _, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: m, ID: id, Owner: "w", Epoch: c.ClaimEpoch, Progress: intp(40), Checkpoint: []byte(`{"step":"` + id + `"}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: id, Text: "note on " + id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	want, err := e.b.List(Filter{}, SortID) // the writer's own state, not read back through the index
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { store.FillRelease = n }(store.FillRelease)
	store.FillRelease = 1 // let go after every card
	got, err := e.open().List(Filter{}, SortID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 200 || !reflect.DeepEqual(got, want) {
		t.Errorf("with pages let go: %d cards, equal %v", len(got), reflect.DeepEqual(got, want))
	}
}
