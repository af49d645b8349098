package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// costly is a pair of globs of one segment each that share no path, and
// whose decision visits about 250,000 table cells.
func costly(i int) (held, want string) {
	return fmt.Sprintf("h%d/%s.x", i, strings.Repeat("*a", 240)), fmt.Sprintf("h%d/%s.y", i, strings.Repeat("*b", 240))
}

// TestPathsSegmentCap: a writer may not set a glob of more than
// MaxPathSegments segments (create or update); the error says so.
func TestPathsSegmentCap(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("**/x/", 16) + "*.go" // 33 segments
	_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "A", Title: "a", Paths: []string{long}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "at most 32") {
		t.Fatalf("create: %v", err)
	}
	e.create("B")
	if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "B", Fields: Fields{Paths: &[]string{"ok/**", long}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("update: %v", err)
	}
	if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "C", Title: "c", Paths: []string{strings.Repeat("**/x/", 15) + "*.go"}}); err != nil {
		t.Fatalf("31 segments: %v", err)
	}
}

// TestClaimPastTheLockedLimit: held globs whose overlaps with the
// candidate's cost more than LockedPathCells under the lock. The claim
// decides them without the lock and takes the card they do not overlap.
func TestClaimPastTheLockedLimit(t *testing.T) {
	e := newEnv(t)
	var want []string
	for i := range 12 {
		h, w := costly(i)
		e.create(fmt.Sprintf("H%d", i), func(r *CreateRequest) { r.Paths = []string{h}; r.Priority = 9 })
		e.claim(fmt.Sprintf("H%d", i), "w1", time.Hour)
		want = append(want, w)
	}
	e.create("C", func(r *CreateRequest) { r.Paths = want })
	c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w2", TTL: time.Minute})
	if err != nil || c == nil || c.ID != "C" {
		t.Fatalf("claim = %v, %v", c, err)
	}
	if _, cut := e.b.held().PathsStopped(); cut {
		t.Fatal("the claim that took C ran out of cells")
	}
}

// TestClaimInterrupted: a signal while overlaps are decided stops the
// claim: it fails as interrupted and appends nothing.
func TestClaimInterrupted(t *testing.T) {
	e := newEnv(t)
	h, w := costly(0)
	e.create("H", func(r *CreateRequest) { r.Paths = []string{h} })
	e.claim("H", "w1", time.Hour)
	e.create("C", func(r *CreateRequest) { r.Paths = []string{w} })
	before := e.bytes()
	b, err := Open(e.dir, Options{Clock: e.clk.Now, Interrupted: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w2", TTL: time.Minute})
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("claim = %v, %v", c, err)
	}
	if string(e.bytes()) != string(before) {
		t.Fatal("an interrupted claim appended")
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.open().Claim(ctx, ClaimRequest{Mutation: m, Owner: "w2", TTL: time.Minute, ID: "C"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("claim with a cancelled context: %v", err)
	}
	// Reads that decide overlaps (bl ready, show: a card's standing) stop too.
	cards, err := b.List(Filter{}, SortClaim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Standings(cards); !errors.Is(err, context.Canceled) {
		t.Fatalf("standings: %v", err)
	}
}

// BenchmarkClaimHeldPaths: the choice of a claim (Pick, in memory, on a
// fresh state as a bl process has) with 1,000 held reservations of
// ordinary globs, and with none; and with 1,000 held reservations each
// making a costly pair (about 250,000 cells) with the candidate.
func BenchmarkClaimHeldPaths(b *testing.B) {
	for _, tc := range []struct {
		name string
		held int
		glob func(i int) (held, want string)
	}{
		{"held0", 0, nil},
		{"held1000", 1000, func(i int) (string, string) {
			return fmt.Sprintf("pkg/m%03d/**", i), "cmd/bl/*.go"
		}},
		{"held1000-costly", 1000, costly},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var evs []*Event
			at := t0
			add := func(e *Event) {
				at = at.Add(time.Millisecond)
				e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", len(evs)+1), at, "bench"
				evs = append(evs, e)
			}
			want := "cmd/bl/*.go"
			for i := range tc.held {
				h, w := tc.glob(i)
				want = w
				add(&Event{Op: OpCreate, Card: fmt.Sprintf("h%04d", i), Fields: &Fields{Title: strp("held"), Priority: intp(5), Paths: strs(h)}})
				add(&Event{Op: OpClaim, Card: fmt.Sprintf("h%04d", i), Owner: "other", TTLSeconds: 3600, ExpectVersion: 1, Epoch: 1})
			}
			add(&Event{Op: OpCreate, Card: "C", Fields: &Fields{Title: strp("candidate"), Paths: strs(want)}})
			now := at.Add(time.Second)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := fold.Fold(evs) // a fresh state: no answer kept from the last claim
				b.StartTimer()
				if c := s.Pick(Filter{}, now.Add(time.Duration(i))); c == nil || c.ID != "C" {
					b.Fatalf("picked %v", c)
				}
			}
		})
	}
}
