package ledger

import (
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
