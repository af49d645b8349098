package ledger

import (
	"context"
	"testing"
	"time"
)

func TestSmokeWorkedExample(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := Mutation{Actor: "t"}
	if _, _, err := b.Create(ctx, CreateRequest{Mutation: m, ID: "A1", Title: "schema", Priority: 5}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Create(ctx, CreateRequest{Mutation: m, ID: "A2", Title: "service", Priority: 9, DependsOn: []string{"A1"}}); err != nil {
		t.Fatal(err)
	}
	c, err := b.Claim(ctx, ClaimRequest{Mutation: m, Owner: "worker-1", TTL: 600 * time.Second})
	if err != nil || c == nil || c.ID != "A1" || c.ClaimEpoch != 1 {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if _, err := b.Complete(ctx, LeaseRequest{Mutation: m, ID: "A1"}); err != nil {
		t.Fatal(err)
	}
	ready, err := b.Ready(Filter{})
	if err != nil || len(ready) != 1 || ready[0].ID != "A2" {
		t.Fatalf("ready = %+v, %v", ready, err)
	}
	b2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := b2.Get("A1")
	if c2.Status != StatusDone || c2.Version != 3 {
		t.Fatalf("reopened A1 = %+v", c2)
	}
}
