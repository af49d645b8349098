package fold

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// TestOrderIsClaimOrder: the place in claim order the walk gives a card
// not decoded yet (from its key) compares as ClaimOrder compares the cards.
func TestOrderIsClaimOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	card := func() *wire.Card {
		return &wire.Card{ID: fmt.Sprintf("C%d", r.IntN(20)), Priority: r.IntN(3) - 1, CreatedAt: base.Add(time.Duration(r.IntN(3)) * time.Nanosecond)}
	}
	for range 5000 {
		a, b := card(), card()
		oa, ob := orderOf(a.ID, a.Priority, a.CreatedAt), orderOf(b.ID, b.Priority, b.CreatedAt)
		if got, want := oa.cmp(&ob), ClaimOrder(a, b); got != want {
			t.Fatalf("%+v vs %+v: order says %d, ClaimOrder %d", a, b, got, want)
		}
	}
}
