package watch

import (
	"context"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// fakeClaimer has nothing claimable at first, then a card once its next
// wake came due.
type fakeClaimer struct {
	dir    string
	wake   time.Time
	claims int
}

func (f *fakeClaimer) Dir() string                  { return f.dir }
func (f *fakeClaimer) NextWake() (time.Time, error) { return f.wake, nil }
func (f *fakeClaimer) Claim(context.Context, ledger.ClaimRequest) (*ledger.Card, error) {
	f.claims++
	if f.claims == 1 {
		return nil, nil
	}
	return &ledger.Card{ID: "A1"}, nil
}

// TestClaimTakesAnyClaimer: Claim asks only what its Claimer interface
// names (a supervisor's test double, a *ledger.Backlog): nothing
// claimable, it waits for the next wake, then claims again.
func TestClaimTakesAnyClaimer(t *testing.T) {
	f := &fakeClaimer{dir: t.TempDir(), wake: time.Now().Add(10 * time.Millisecond)}
	card, err := Claim(context.Background(), f, ledger.ClaimRequest{}, time.Hour)
	if err != nil || card == nil || card.ID != "A1" || f.claims != 2 {
		t.Fatalf("claim: %v, %v after %d claims; want A1 at the second", card, err, f.claims)
	}
}

var (
	_ Claimer = (*ledger.Backlog)(nil)
	_ Logger  = (*ledger.Backlog)(nil)
)
