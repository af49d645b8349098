package arbiter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
	"github.com/bl-backlog/bl/ledger"
)

// TestSharedConnectionOneCardPerRequest: calls of one process share an
// Arbiter (bl daemon, bl run). Two claims with one request id at once (a
// retry relayed while the killed caller's first call still runs) get one
// card between them, and claims with distinct ids get distinct cards.
func TestSharedConnectionOneCardPerRequest(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	dirs := clones(t, 1, 40)
	b := open(t, dirs[0])
	a := dial(t, srv.URL())
	ctx := context.Background()
	var wg sync.WaitGroup
	got := make([][2]string, 10)
	for i := range got {
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := a.Claim(ctx, b, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "t", RequestID: fmt.Sprintf("r%d", i)}, Owner: fmt.Sprintf("o%d", i), TTL: 3600e9})
				if err != nil || c == nil {
					t.Errorf("claim r%d: %v %v", i, c, err)
					return
				}
				got[i][j] = c.ID
			}()
		}
	}
	wg.Wait()
	seen := map[string]int{}
	for i, pair := range got {
		if pair[0] != pair[1] {
			t.Errorf("request r%d was answered with two cards: %s and %s", i, pair[0], pair[1])
		}
		if prev, ok := seen[pair[0]]; ok && pair[0] != "" {
			t.Errorf("card %s went to r%d and r%d", pair[0], prev, i)
		}
		seen[pair[0]] = i
	}
	var claims int
	_ = b.View(func(st *ledger.State, now time.Time) error {
		for _, c := range st.List(ledger.Filter{}, now, "") {
			if c.Status == ledger.StatusClaimed {
				claims++
			}
		}
		return nil
	})
	if claims != len(got) {
		t.Errorf("%d cards claimed, want %d", claims, len(got))
	}
}
