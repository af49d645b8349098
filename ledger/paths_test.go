package ledger

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// TestPathsOverlap is the table of the overlap decision: yes whenever
// some path matches both globs, no only when none can.
func TestPathsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"src/lexer/**", "src/lexer/scan.go", true},
		{"src/lexer", "src/lexer/scan.go", true}, // a directory covers its contents
		{"src/lexer/**", "src/parser/**", false},
		{"src/**", "src/parser/parse.go", true},
		{"**", "anything/at/all", true},
		{"**/*.go", "docs/*.md", false},
		{"**/*.go", "src/a.go", true},
		{"src/*.go", "src/*_test.go", true},      // src/x_test.go
		{"src/*.go", "src/*.md", false},          // suffixes disagree
		{"src/a*", "src/b*", false},              // prefixes disagree
		{"src/ab*", "src/a*", true},              // one prefix starts the other
		{"src/*.go", "src/lexer/scan.go", false}, // * stays within a segment
		{"src/lexer", "src/*/scan.go", true},
		{"src/?.go", "src/ab.go", false},
		{"src/[ab].go", "src/a.go", true},
		{"src/[ab].go", "src/c.go", false},
		{"docs/README.md", "docs/README.md", true},
		{"docs/README.md", "docs/INDEX.md", false},
		{"a/**/z", "a/b/c/z", true},
		{"a/**/z", "a/b/c/y", true}, // a/b/c/y/z
		{"a/**/*.go", "a/b/*.md", false},
		{"a/**/z", "a/**/y", true}, // a/z/y: the first covers it
		{"a/*/c", "a/b/*", true},
		{"x/*/c", "y/*/c", false},
		{"README.md", "src/**", false},
		// Classes and stars are decided exactly, not by prefix and suffix.
		{"src/[ab]*", "src/c*", false},
		{"src/[ab]*", "src/?b*", true},
		{"src/[^a]x", "src/ax", false},
		{"src/*a*", "src/*b*", true},
		{"src/a*b", "src/*c", false},
		{"src/**/**/x", "src/y/**", true},
	} {
		if got := fold.PathsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("PathsOverlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := fold.PathsOverlap(tc.b, tc.a); got != tc.want {
			t.Errorf("PathsOverlap(%q, %q) = %v, want %v (reversed)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestPathMatches(t *testing.T) {
	for _, tc := range []struct {
		glob, file string
		want       bool
	}{
		{"src/lexer/**", "src/lexer/scan.go", true},
		{"src/lexer", "src/lexer/a/b.go", true},
		{"src/lexer", "src/lexers/a.go", false},
		{"**/*.md", "README.md", true},
		{"**/*.md", "docs/x/y.md", true},
		{"*.go", "src/a.go", false},
		{"src/*.go", "src/a.go", true},
	} {
		if got := PathMatches(tc.glob, tc.file); got != tc.want {
			t.Errorf("PathMatches(%q, %q) = %v, want %v", tc.glob, tc.file, got, tc.want)
		}
	}
}

func TestValidPath(t *testing.T) {
	for _, bad := range []string{"", " ", "/etc/passwd", "a/../b", "./a", "a//b", "src/[", "a\\b"} {
		if err := fold.ValidPath(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidPath(%q) = %v", bad, err)
		}
	}
	for _, good := range []string{"src/**", "README.md", "a/*/b?.go", "x/[ab].c"} {
		if err := fold.ValidPath(good); err != nil {
			t.Errorf("ValidPath(%q) = %v", good, err)
		}
	}
}

// TestClaimSkipsHeldPaths: a claim passes over a card whose paths overlap
// a live claim's or a card in review, takes a card beside them, and claim
// --id of the held card is refused naming the holder. Once the holder is
// done the card is claimable.
func TestClaimSkipsHeldPaths(t *testing.T) {
	e := newEnv(t)
	mk := func(id string, prio int, paths ...string) {
		if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: id, Title: id, Priority: prio, Paths: paths}); err != nil {
			t.Fatal(err)
		}
	}
	mk("A7", 9, "src/lexer/**")
	mk("B", 8, "src/lexer/scan.go")
	mk("C", 7, "src/parser/**")
	mk("D", 6)
	a := e.claim("A7", "w1", time.Minute)
	c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w2", TTL: time.Minute})
	if err != nil || c == nil || c.ID != "C" {
		t.Fatalf("claim beside A7 took %v (%v), want C", c, err)
	}
	_, err = e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "B", Owner: "w3", TTL: time.Minute})
	if !errors.Is(err, ErrPathsHeld) || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "A7") {
		t.Fatalf("claim --id B: %v", err)
	}
	ready, err := e.b.Ready(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := e.b.Standings(ready)
	for i, card := range ready {
		if card.ID == "B" && (st[i].PathsHeldBy != "A7" || st[i].Claimable || st[i].State != StateWaiting) {
			t.Fatalf("B stands %+v", st[i])
		}
	}
	// In review, A7 still holds its paths.
	if _, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: m, ID: "A7", Owner: "w1", Epoch: a.ClaimEpoch}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w3", TTL: time.Minute}); err != nil || got == nil || got.ID != "D" {
		t.Fatalf("claim while A7 is in review took %v (%v), want D", got, err)
	}
	holds, err := e.b.PathHolds()
	if err != nil || len(holds) != 2 || holds[0].Card != "A7" || holds[0].Owner != "w1" || holds[1].Card != "C" {
		t.Fatalf("holds = %+v %v", holds, err)
	}
	if _, err := e.b.Approve(e.ctx, ReviewRequest{Mutation: Mutation{Actor: "rev"}, ID: "A7"}); err != nil {
		t.Fatal(err)
	}
	// The same through a fresh handle reading the snapshot's index.
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
	if got, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w4", TTL: time.Minute}); err != nil || got == nil || got.ID != "B" {
		t.Fatalf("after A7 approved: %v %v", got, err)
	}
}

// TestHeldPathsThroughIndex: holders only the snapshot knows (in review,
// under a live lease) are found through its index.
func TestHeldPathsThroughIndex(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		id := fmt.Sprintf("R%02d", i)
		if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: id, Title: id, Priority: 1, Paths: []string{"lib/" + id + "/**"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "H", Title: "H", Priority: 5, Paths: []string{"lib/**"}}); err != nil {
		t.Fatal(err)
	}
	h := e.claim("H", "w", time.Hour)
	if _, err := e.b.Submit(e.ctx, LeaseRequest{Mutation: m, ID: "H", Owner: "w", Epoch: h.ClaimEpoch}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
	if got, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w2", TTL: time.Minute}); err != nil || got != nil {
		t.Fatalf("claimed %v (%v) while H in review holds lib/**", got, err)
	}
}
