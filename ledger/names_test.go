package ledger

import (
	"fmt"
	"slices"
	"testing"
)

// TestCardsNamed: an exact id wins; then an imported card's source key;
// then a prefix of four characters or more, with or without the bl- of a
// generated id; live cards before deleted ones; after a compaction too.
func TestCardsNamed(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"bl-c10704nf", "bl-c1x00000", "abcd1", "abcd2", "A1", "A12", "gone1"} {
		e.create(id)
	}
	e.create("imp", func(r *CreateRequest) { r.IdempotencyKey = "beads:bd-44d0" })
	e.create("md", func(r *CreateRequest) { r.IdempotencyKey = "markdown:PLAN.md:M1/x" })
	if _, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "gone1"}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		for _, tc := range []struct {
			word string
			want []string
		}{
			{"A1", []string{"A1"}},               // exact, though A12 shares it
			{"A", nil},                           // too short to complete
			{"c107", []string{"bl-c10704nf"}},    // bl- left out
			{"bl-c107", []string{"bl-c10704nf"}}, // bl- kept
			{"c10", nil},
			{"bl-c1", nil}, // "c1": too short
			{"c1x0", []string{"bl-c1x00000"}},
			{"abcd", []string{"abcd1", "abcd2"}}, // ambiguous
			{"bd-44d0", []string{"imp"}},         // beads' key
			{"beads", nil},
			{"x", nil},                  // a markdown key's tail is no name
			{"gone", []string{"gone1"}}, // only a deleted card matches
			{"gone1", []string{"gone1"}},
			{"#12", nil},
			{"", nil},
		} {
			got, err := e.b.CardsNamed(tc.word)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("%s: CardsNamed(%q) = %v, %v; want %v", when, tc.word, got, err, tc.want)
			}
		}
	}
	check("from the ledger")
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
	check("from the snapshot")
}

// TestCardsNamedReadsOnlyMatches: through the snapshot's index, a prefix
// or a source key reads the cards that match, not every card, and finds
// what the full fold finds, cards changed since the snapshot included.
func TestCardsNamedReadsOnlyMatches(t *testing.T) {
	e := newEnv(t)
	for i := range 300 {
		e.create(fmt.Sprintf("card-%03d", i))
	}
	e.create("zeta-1")
	e.create("zeta-2")
	e.create("imp", func(r *CreateRequest) { r.IdempotencyKey = "beads:bd-77" })
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	// After the snapshot: a new match, a match deleted.
	e.create("zeta-3")
	if _, err := e.b.Delete(e.ctx, DeleteRequest{Mutation: m, ID: "zeta-1"}); err != nil {
		t.Fatal(err)
	}
	words := []string{"zeta", "zeta-2", "card-29", "bd-77", "nope", "card"}
	lazy := e.open()
	defer lazy.Close()
	if lazy.held().Source() == nil {
		t.Fatal("the backlog did not open through its index")
	}
	var got [][]string
	for _, w := range words {
		ids, err := lazy.CardsNamed(w)
		if err != nil {
			t.Fatal(err)
		}
		if w != "card" {
			got = append(got, ids)
		}
		if n, _, _ := lazy.held().InMemory(); n > 30 && w != "card" {
			t.Fatalf("naming %q read %d cards into memory", w, n)
		}
	}
	whole := e.open()
	defer whole.Close()
	if _, err := whole.List(Filter{}, SortID); err != nil { // reads every card
		t.Fatal(err)
	}
	var want [][]string
	for _, w := range words[:len(words)-1] {
		ids, err := whole.CardsNamed(w)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ids)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("through the index %v; the full fold %v", got, want)
	}
	if fmt.Sprint(want) != "[[zeta-2 zeta-3] [zeta-2] [card-290 card-291 card-292 card-293 card-294 card-295 card-296 card-297 card-298 card-299] [imp] []]" {
		t.Fatalf("the full fold names %v", want)
	}
}
