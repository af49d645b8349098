package watch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

func TestClaimTakesACardCreatedDuringTheWait(t *testing.T) {
	dir, b := setup(t)
	writer, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		card *ledger.Card
		err  error
	}
	got := make(chan result, 1)
	go func() {
		c, err := Claim(context.Background(), b, ledger.ClaimRequest{Mutation: m, Owner: "w1", TTL: time.Minute}, time.Minute)
		got <- result{c, err}
	}()
	create(t, writer, "A") // before or after the first attempt: either way it is claimed
	select {
	case r := <-got:
		if r.err != nil || r.card == nil || r.card.ID != "A" || r.card.ClaimOwner != "w1" {
			t.Fatalf("Claim = %+v, %v; want A claimed by w1", r.card, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Claim did not claim the card created during its wait")
	}
}

func TestClaimEndsEmpty(t *testing.T) {
	_, b := setup(t)
	req := ledger.ClaimRequest{Mutation: m, Owner: "w1", TTL: time.Minute}
	// The wait runs out: no card, no error.
	if c, err := Claim(context.Background(), b, req, 10*time.Millisecond); c != nil || err != nil {
		t.Fatalf("after the wait ran out: %+v, %v", c, err)
	}
	// The context ends first: its error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := Claim(ctx, b, req, time.Minute); c != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("after the context ended: %+v, %v", c, err)
	}
}

func TestClaimWakesWhenALeaseExpires(t *testing.T) {
	dir, b := setup(t)
	create(t, b, "A")
	if _, err := b.Claim(context.Background(), ledger.ClaimRequest{Mutation: m, Owner: "w0", TTL: time.Second, ID: "A"}); err != nil {
		t.Fatal(err)
	}
	// Nothing touches the ledger again: only the lease's expiry can wake
	// the waiter.
	other, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Claim(context.Background(), other, ledger.ClaimRequest{Mutation: m, Owner: "w1", TTL: time.Minute}, 20*time.Second)
	if err != nil || c == nil || c.ID != "A" || c.ClaimOwner != "w1" || c.ClaimEpoch != 2 {
		t.Fatalf("Claim = %+v, %v; want A claimed by w1 at epoch 2", c, err)
	}
}
