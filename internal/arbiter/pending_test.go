package arbiter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
	"github.com/bl-backlog/bl/ledger"
)

// A claim whose process died after the arbiter took it, before the clone
// appended it: the retry (same request id) answers with that card, even
// when this clone would now pick another, rather than claim a second card
// under one request.
func TestRetryFindsTheClaimThatLanded(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "c1")
	if _, err := ledger.Init(dir); err != nil {
		t.Fatal(err)
	}
	b1, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b1.Close()
	for _, c := range []struct {
		id   string
		prio int
	}{{"A1", 5}, {"A2", 1}} {
		if _, _, err := b1.Create(ctx, ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "t"}, ID: c.id, Title: "x", Priority: c.prio}); err != nil {
			t.Fatal(err)
		}
	}
	// The attempt that died: its write landed on A1 (made here from a copy
	// of the clone, which the dead process's memory was), never appended.
	dead := filepath.Join(t.TempDir(), "dead")
	if err := os.CopyFS(dead, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	bd, err := ledger.Open(dead, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	a, err := Dial(ctx, Settings{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	req := ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w", RequestID: "R"}, Owner: "w", TTL: time.Minute}
	notePending(b1, "R", "A1")
	if c, err := a.Claim(ctx, bd, req); err != nil || c.ID != "A1" {
		t.Fatalf("the first attempt: %+v, %v", c, err)
	}
	// Meanwhile this clone would pick A2 first.
	p := 0
	if _, err := b1.Update(ctx, ledger.UpdateRequest{Mutation: ledger.Mutation{Actor: "t"}, ID: "A1", Fields: ledger.Fields{Priority: &p}}); err != nil {
		t.Fatal(err)
	}
	c, err := a.Claim(ctx, b1, req)
	if err != nil || c == nil || c.ID != "A1" {
		t.Fatalf("the retry claimed %+v (%v); the request's claim is A1", c, err)
	}
}
