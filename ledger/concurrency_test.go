package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

type claimRecord struct {
	card  string
	epoch int64
	owner string
}

// TestConcurrentClaims runs many workers, each with its own Backlog handle
// on one directory, as separate processes would. They claim, heartbeat,
// release, complete and let leases lapse on a shared clock that moves on
// every read, so leases expire and are taken over constantly. No (card,
// epoch) may ever have two winners, every card's epochs must run 1..n
// without gaps, and the ledger must fold without a single conflict.
func TestConcurrentClaims(t *testing.T) {
	const (
		workers = 12
		rounds  = 25
		cards   = 4
	)
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	clk.step = 150 * time.Millisecond // every clock read moves time on
	setup, err := Open(dir, Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < cards; i++ {
		if _, _, err := setup.Create(context.Background(), CreateRequest{Mutation: m, ID: fmt.Sprintf("C%d", i), Title: "t"}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu      sync.Mutex
		records []claimRecord
		fenced  int
		wg      sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			owner := fmt.Sprintf("w%02d", w)
			ctx := context.Background()
			mut := Mutation{Actor: owner}
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			b, err := Open(dir, Options{Clock: clk.Now, LockTimeout: 30 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			var stale *Card // a lease this worker walked away from
			for r := 0; r < rounds; r++ {
				if stale != nil && rng.IntN(2) == 0 {
					// Come back late to an old lease: either it is still
					// ours, or the call is fenced.
					_, err := b.Heartbeat(ctx, HeartbeatRequest{Mutation: mut, ID: stale.ID, Owner: owner, Epoch: stale.ClaimEpoch})
					if errors.Is(err, ErrFenced) {
						mu.Lock()
						fenced++
						mu.Unlock()
					} else if err != nil {
						errs <- fmt.Errorf("%s late heartbeat: %w", owner, err)
						return
					}
					stale = nil
				}
				req := ClaimRequest{Mutation: mut, Owner: owner, TTL: time.Second}
				if rng.IntN(4) == 0 {
					req.ID = fmt.Sprintf("C%d", rng.IntN(cards))
				}
				c, err := b.Claim(ctx, req)
				if req.ID != "" && errors.Is(err, ErrConflict) {
					continue // held by someone else or done
				}
				if err != nil {
					errs <- fmt.Errorf("%s claim: %w", owner, err)
					return
				}
				if c == nil {
					continue
				}
				if c.ClaimOwner != owner || c.Status != StatusClaimed {
					errs <- fmt.Errorf("%s got a card it does not hold: %+v", owner, c)
					return
				}
				mu.Lock()
				records = append(records, claimRecord{c.ID, c.ClaimEpoch, owner})
				mu.Unlock()

				lr := LeaseRequest{Mutation: mut, ID: c.ID, Owner: owner, Epoch: c.ClaimEpoch}
				switch rng.IntN(5) {
				case 0:
					_, err = b.Heartbeat(ctx, HeartbeatRequest{Mutation: mut, ID: c.ID, Owner: owner, Epoch: c.ClaimEpoch})
				case 1:
					_, err = b.Release(ctx, lr)
				case 2:
					_, err = b.Complete(ctx, lr)
					if err == nil {
						_, err = b.Reopen(ctx, mut, c.ID)
						if errors.Is(err, ErrConflict) {
							err = nil // someone else reopened or claimed it first
						}
					}
				case 3:
					if _, err = b.Reclaim(ctx, ReclaimRequest{Mutation: mut}); err == nil {
						_, err = b.Release(ctx, lr)
					}
				default:
					// Walk away and let the lease lapse.
					stale = c
				}
				if errors.Is(err, ErrFenced) {
					mu.Lock()
					fenced++
					mu.Unlock()
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("%s on %s: %w", owner, c.ID, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	winners := map[string]map[int64]string{}
	for _, r := range records {
		if winners[r.card] == nil {
			winners[r.card] = map[int64]string{}
		}
		if prev, ok := winners[r.card][r.epoch]; ok {
			t.Fatalf("card %s epoch %d won by both %s and %s", r.card, r.epoch, prev, r.owner)
		}
		winners[r.card][r.epoch] = r.owner
	}
	final := foldHistory(t, dir) // automatic compactions ran meanwhile
	if n := len(final.Conflicts()); n != 0 {
		t.Fatalf("the ledger folds with %d conflicts: %+v", n, final.Conflicts()[0])
	}
	total := 0
	for id, epochs := range winners {
		var es []int64
		for ep := range epochs {
			es = append(es, ep)
		}
		sort.Slice(es, func(i, j int) bool { return es[i] < es[j] })
		for i, ep := range es {
			if ep != int64(i+1) {
				t.Fatalf("card %s epochs %v have a gap", id, es)
			}
		}
		c, _ := final.Card(id)
		if c.ClaimEpoch != int64(len(es)) {
			t.Fatalf("card %s is at epoch %d, but %d claims were won", id, c.ClaimEpoch, len(es))
		}
		total += len(es)
	}
	var claims int
	for _, e := range historyEvents(t, dir) {
		if e.Op == OpClaim {
			claims++
		}
	}
	if claims != total {
		t.Fatalf("ledger holds %d claims, workers won %d", claims, total)
	}
	// Count claims that took a lease over from another owner.
	takeovers := 0
	replay := fold.NewState()
	for _, e := range historyEvents(t, dir) {
		if c, ok := replay.Card(e.Card); ok && e.Op == OpClaim && c.Status == StatusClaimed && c.ClaimOwner != e.Owner {
			takeovers++
		}
		_ = replay.Apply(e)
	}
	if takeovers == 0 || fenced == 0 {
		t.Fatalf("%d takeovers of expired leases and %d fenced calls; the test exercised too little", takeovers, fenced)
	}
	if total < workers {
		t.Fatalf("only %d claims won; the test exercised too little", total)
	}
	t.Logf("%d claims won, %d takeovers, %d fenced calls", total, takeovers, fenced)
}
