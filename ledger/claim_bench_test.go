package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// BenchmarkClaim measures a claim and its release on an open handle over a
// compacted backlog of 1,000 cards, ten of them held by other owners: with
// no card carrying paths, and with every card carrying paths (disjoint, so
// each claim checks the best card against the held paths).
func BenchmarkClaim(b *testing.B) {
	for _, withPaths := range []bool{false, true} {
		name := "nopaths"
		if withPaths {
			name = "paths1k"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b)
			noCompaction(e)
			for i := range 1000 {
				r := CreateRequest{Mutation: m, ID: fmt.Sprintf("c%04d", i), Title: "a card of the benchmark", Priority: i % 10}
				if withPaths {
					r.Paths = []string{fmt.Sprintf("pkg/m%03d/**", i), fmt.Sprintf("docs/m%03d.md", i)}
				}
				if _, _, err := e.b.Create(e.ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 10 {
				if _, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: fmt.Sprintf("other-%d", i), TTL: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := e.b.Compact(e.ctx); err != nil {
				b.Fatal(err)
			}
			e.b = e.open()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "bench", TTL: time.Hour})
				if err != nil || c == nil {
					b.Fatalf("claim: %v %v", c, err)
				}
				if _, err := e.b.Release(e.ctx, LeaseRequest{Mutation: m, ID: c.ID, Owner: "bench", Epoch: c.ClaimEpoch}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClaimPick measures the choice a claim makes, without the
// append: Pick over the folded state of the same backlogs as
// BenchmarkClaim, in memory, so the cost of the path check is not lost in
// the fsync.
func BenchmarkClaimPick(b *testing.B) {
	for _, withPaths := range []bool{false, true} {
		name := "nopaths"
		if withPaths {
			name = "paths1k"
		}
		b.Run(name, func(b *testing.B) {
			var evs []*Event
			at := t0
			add := func(e *Event) {
				at = at.Add(time.Millisecond)
				e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", len(evs)+1), at, "bench"
				evs = append(evs, e)
			}
			for i := range 1000 {
				f := &Fields{Title: strp("a card of the benchmark"), Priority: intp(i % 10)}
				if withPaths {
					f.Paths = strs(fmt.Sprintf("pkg/m%03d/**", i), fmt.Sprintf("docs/m%03d.md", i))
				}
				add(&Event{Op: OpCreate, Card: fmt.Sprintf("c%04d", i), Fields: f})
			}
			for i := range 10 {
				add(&Event{Op: OpClaim, Card: fmt.Sprintf("c%04d", i*10+9), Owner: "other", TTLSeconds: 3600, ExpectVersion: 1, Epoch: 1})
			}
			s := fold.Fold(evs)
			now := at.Add(time.Second)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// a new now each time: each claim computes the holders afresh
				if s.Pick(Filter{}, now.Add(time.Duration(i))) == nil {
					b.Fatal("nothing picked")
				}
			}
		})
	}
}
