package ledger

import (
	"testing"
	"time"
)

// TestHeldPathsAcrossHandles: a handle that opened before another took a
// card sees that claim's held paths once it catches up.
func TestHeldPathsAcrossHandles(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		id    string
		prio  int
		paths []string
	}{{"A", 9, []string{"src/lexer/**"}}, {"B", 8, []string{"src/lexer/lex.go"}}, {"C", 7, []string{"docs/**"}}} {
		if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: c.id, Title: c.id, Priority: c.prio, Paths: c.paths}); err != nil {
			t.Fatal(err)
		}
	}
	h1, h2 := e.open(), e.open()
	if _, err := h2.Ready(Filter{}); err != nil { // h2 has read the state before the claim
		t.Fatal(err)
	}
	a, err := h1.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "s1", TTL: 20 * time.Second})
	if err != nil || a == nil || a.ID != "A" {
		t.Fatalf("first claim: %v %v", a, err)
	}
	c, err := h2.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "s2", TTL: 20 * time.Second})
	if err != nil || c == nil || c.ID != "C" {
		t.Fatalf("second claim took %v (%v), want C", c, err)
	}
}
