package arbiter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter"
	"github.com/bl-backlog/bl/internal/arbiter/natstest"
	"github.com/bl-backlog/bl/ledger"
)

// clones makes n copies of one backlog holding cards cards, never
// compacted (so their ledgers' union is their merge).
func clones(t *testing.T, n, cards int) []string {
	t.Helper()
	first := filepath.Join(t.TempDir(), "c0")
	if _, err := ledger.Init(first); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first, ledger.ConfigFile), []byte(`{"version":1,"compact_bytes":-1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := open(t, first)
	for i := range cards {
		if _, _, err := b.Create(context.Background(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "t"}, ID: fmt.Sprintf("A%d", i+1), Title: "card"}); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []string{first}
	for i := 1; i < n; i++ {
		d := filepath.Join(filepath.Dir(first), fmt.Sprintf("c%d", i))
		if err := os.CopyFS(d, os.DirFS(first)); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func open(t *testing.T, dir string) *ledger.Backlog {
	t.Helper()
	b, err := ledger.Open(dir, ledger.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func dial(t *testing.T, url string) *arbiter.Arbiter {
	t.Helper()
	a, err := arbiter.Dial(context.Background(), arbiter.Settings{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// merged folds the union of the clones' ledgers, as git's union merge
// of their branches leaves it.
func merged(t *testing.T, dirs []string) *ledger.Backlog {
	t.Helper()
	out := filepath.Join(t.TempDir(), "merged")
	if err := os.CopyFS(out, os.DirFS(dirs[0])); err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, ledger.LedgerFile))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, data...)
	}
	if err := os.WriteFile(filepath.Join(out, ledger.LedgerFile), all, 0o644); err != nil {
		t.Fatal(err)
	}
	return open(t, out)
}

// Clones × workers claim and complete every card through one arbiter:
// each card is acknowledged to one worker, and the merge of the clones'
// ledgers folds every acknowledged claim and completion as it was told.
func TestClaimsAcrossClones(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	const nClones, nWorkers, nCards = 3, 3, 24
	dirs := clones(t, nClones, nCards)
	type ack struct {
		owner string
		epoch int64
	}
	var mu sync.Mutex
	won := map[string][]ack{}
	var wg sync.WaitGroup
	errs := make(chan error, nClones*nWorkers)
	for ci, dir := range dirs {
		for w := range nWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				b, err := ledger.Open(dir, ledger.Options{LockTimeout: 10 * time.Second})
				if err != nil {
					errs <- err
					return
				}
				defer b.Close()
				a, err := arbiter.Dial(ctx, arbiter.Settings{URL: srv.URL()})
				if err != nil {
					errs <- err
					return
				}
				defer a.Close()
				owner := fmt.Sprintf("c%d-w%d", ci, w)
				for {
					c, err := a.Claim(ctx, b, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, Owner: owner, TTL: time.Minute})
					if err != nil {
						errs <- fmt.Errorf("%s claim: %w", owner, err)
						return
					}
					if c == nil {
						return
					}
					mu.Lock()
					won[c.ID] = append(won[c.ID], ack{owner, c.ClaimEpoch})
					mu.Unlock()
					req := ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: owner}, ID: c.ID, Owner: owner, Epoch: c.ClaimEpoch}
					if _, err := a.Lease(ctx, b, c.ID, "", func(ctx context.Context, rid string) (ledger.Card, error) {
						req.RequestID = rid
						return b.Complete(ctx, req)
					}); err != nil {
						errs <- fmt.Errorf("%s complete %s: %w", owner, c.ID, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(won) != nCards {
		t.Fatalf("%d cards claimed, want %d", len(won), nCards)
	}
	m := merged(t, dirs)
	for id, acks := range won {
		if len(acks) != 1 {
			t.Errorf("%s acknowledged %d times: %v", id, len(acks), acks)
		}
		c, err := m.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != ledger.StatusDone || c.ClaimEpoch != acks[0].epoch {
			t.Errorf("merged: %s is %s at epoch %d; %s was told epoch %d and completed it", id, c.Status, c.ClaimEpoch, acks[0].owner, acks[0].epoch)
		}
	}
	if st, _ := m.Stats(); st.Conflicts != 0 {
		t.Errorf("merged backlog folds %d conflicts", st.Conflicts)
	}
}

// An owner whose lease expired and was taken over on another clone is
// fenced at its next heartbeat, and its clone's ledger is not written.
func TestStaleOwnerFenced(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	dirs := clones(t, 2, 1)
	ctx := context.Background()
	a1, a2 := dial(t, srv.URL()), dial(t, srv.URL())
	b1, b2 := open(t, dirs[0]), open(t, dirs[1])
	c, err := a1.Claim(ctx, b1, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "old"}, Owner: "old", TTL: time.Second})
	if err != nil || c == nil {
		t.Fatalf("claim: %v", err)
	}
	time.Sleep(1100 * time.Millisecond)
	c2, err := a2.Claim(ctx, b2, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "new"}, Owner: "new", TTL: time.Minute})
	if err != nil || c2 == nil || c2.ClaimEpoch != 2 {
		t.Fatalf("takeover: %+v, %v", c2, err)
	}
	before, _ := os.ReadFile(filepath.Join(dirs[0], ledger.LedgerFile))
	_, err = a1.Lease(ctx, b1, "A1", "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b1.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "old", RequestID: rid}, ID: "A1", Owner: "old", Epoch: 1})
	})
	if !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("stale heartbeat: %v, want fenced", err)
	}
	after, _ := os.ReadFile(filepath.Join(dirs[0], ledger.LedgerFile))
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the ledger changed other than by taking in the arbiter's lines")
	}
	if got, _ := b1.Get("A1"); got.ClaimOwner != "new" {
		t.Fatalf("the fenced clone sees %s held by %q", got.ID, got.ClaimOwner)
	}
}

// An arbiter that cannot be reached is its own error, and nothing is
// written.
func TestUnreachable(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	url := srv.URL()
	srv.Shutdown()
	srv.WaitForShutdown()
	_, err := arbiter.Dial(context.Background(), arbiter.Settings{URL: url, Timeout: time.Second})
	var ue *arbiter.UnreachableError
	if !errors.As(err, &ue) || ue.Unsure {
		t.Fatalf("err = %v, want unreachable", err)
	}
}

// The server restarts on its file store: the claims it acknowledged stand.
func TestServerRestartKeepsClaims(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	dirs := clones(t, 2, 1)
	ctx := context.Background()
	b1, b2 := open(t, dirs[0]), open(t, dirs[1])
	a1 := dial(t, srv.URL())
	if c, err := a1.Claim(ctx, b1, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w1"}, Owner: "w1", TTL: time.Minute}); err != nil || c == nil {
		t.Fatalf("claim: %v", err)
	}
	srv = natstest.Restart(t, srv)
	a2 := dial(t, srv.URL())
	c, err := a2.Claim(ctx, b2, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w2"}, Owner: "w2", TTL: time.Minute})
	if err != nil || c != nil {
		t.Fatalf("after the restart a second clone claimed %+v (%v); the card is held", c, err)
	}
}

// A clone that follows the arbiter takes another clone's decisions into
// its ledger as the arbiter takes them (bl watch shows them from there).
func TestFollowTakesDecisions(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	dirs := clones(t, 2, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1, a2 := dial(t, srv.URL()), dial(t, srv.URL())
	b1, b2 := open(t, dirs[0]), open(t, dirs[1])
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() { done <- a2.Follow(ctx, b2, started) }()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if c, err := a1.Claim(ctx, b1, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w1"}, Owner: "w1", TTL: time.Minute}); err != nil || c == nil {
		t.Fatalf("claim: %v", err)
	}
	claimed := time.Now()
	for {
		if c, _ := b2.Get("A1"); c.ClaimOwner == "w1" {
			t.Logf("the following clone saw the claim %s after it was acknowledged", time.Since(claimed).Round(time.Millisecond))
			break
		}
		if time.Since(claimed) > 30*time.Second {
			t.Fatal("the following clone never saw the claim")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A server that accepts the connection and never answers (stopped, or a
// network that drops replies) is unreachable after the timeout, not a
// call that hangs past the lease it was to renew.
func TestSilentArbiterTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, err = arbiter.Dial(context.Background(), arbiter.Settings{URL: "nats://" + l.Addr().String(), Timeout: 300 * time.Millisecond})
	var ue *arbiter.UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want unreachable", err)
	}
}

// The review hand-off across clones: one clone's worker sends its card to
// review, a reviewer on another clone takes the review lease (finding the
// card in review through the arbiter alone) and approves it; the merge of
// the two ledgers folds it done with no conflict.
func TestReviewAcrossClones(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	dirs := clones(t, 2, 1)
	ctx := context.Background()
	a1, a2 := dial(t, srv.URL()), dial(t, srv.URL())
	b1, b2 := open(t, dirs[0]), open(t, dirs[1])
	c, err := a1.Claim(ctx, b1, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w1"}, Owner: "w1", TTL: time.Minute})
	if err != nil || c == nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := a1.Lease(ctx, b1, "A1", "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b1.Submit(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "w1", RequestID: rid}, ID: "A1", Owner: "w1", Epoch: c.ClaimEpoch})
	}); err != nil {
		t.Fatalf("submit: %v", err)
	}
	r, err := a2.ClaimReview(ctx, b2, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "rv"}, Owner: "rv", TTL: time.Minute})
	if err != nil || r == nil {
		t.Fatalf("review claim: %+v, %v", r, err)
	}
	if _, err := a2.Lease(ctx, b2, "A1", "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b2.Approve(ctx, ledger.ReviewRequest{Mutation: ledger.Mutation{Actor: "rv", RequestID: rid}, ID: "A1", Owner: "rv", Epoch: r.ClaimEpoch})
	}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	m := merged(t, dirs)
	got, err := m.Get("A1")
	if err != nil || got.Status != ledger.StatusDone {
		t.Fatalf("merged: %+v, %v", got, err)
	}
	if st, _ := m.Stats(); st.Conflicts != 0 {
		t.Errorf("merged backlog folds %d conflicts", st.Conflicts)
	}
}

// A clone that saw a card claimed learns of its release made elsewhere
// when its own fold has nothing claimable: a plain claim reads the
// arbiter's records then, rather than wait out a lease that is gone.
func TestClaimSeesReleaseMadeElsewhere(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	dirs := clones(t, 2, 1)
	ctx := context.Background()
	a1, a2 := dial(t, srv.URL()), dial(t, srv.URL())
	b1, b2 := open(t, dirs[0]), open(t, dirs[1])
	c, err := a1.Claim(ctx, b1, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w1"}, Owner: "w1", TTL: time.Hour})
	if err != nil || c == nil {
		t.Fatalf("claim: %v", err)
	}
	// Clone 2 learns of the claim: nothing is claimable there.
	if c, err := a2.Claim(ctx, b2, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w2"}, Owner: "w2", TTL: time.Hour}); err != nil || c != nil {
		t.Fatalf("second claim while held: %+v, %v", c, err)
	}
	if _, err := a1.Lease(ctx, b1, "A1", "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b1.Release(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "w1", RequestID: rid}, ID: "A1", Owner: "w1", Epoch: 1})
	}); err != nil {
		t.Fatalf("release: %v", err)
	}
	c2, err := a2.Claim(ctx, b2, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w2"}, Owner: "w2", TTL: time.Hour})
	if err != nil || c2 == nil || c2.ClaimEpoch != 2 {
		t.Fatalf("claim after the release elsewhere: %+v, %v", c2, err)
	}
}

// A URL the arbiter refuses is named without its password.
func TestRefusedURLHidesPassword(t *testing.T) {
	for _, u := range []string{
		"nats://alice:s3cret@127.0.0.1:4222/bad.bucket",
		"nats://alice:s3cret@127.0.0.1:4222/?replicas=9",
		"http://alice:s3cret@127.0.0.1:4222",
		"nats://alice:s3cret@127.0.0.1:4222,nats://bob:hunter2@[::1",
	} {
		_, err := arbiter.Dial(context.Background(), arbiter.Settings{URL: u})
		if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// A release made elsewhere before a watch or a wait began is taken in
// when it begins: bl watch shows the card free, and claim --wait takes it
// at once (not when the clone's lease of it runs out).
func TestFollowAndWaitTakeInWhatCameBefore(t *testing.T) {
	srv := natstest.Start(t, t.TempDir())
	dirs := clones(t, 2, 1)
	ctx := context.Background()
	a1, a2 := dial(t, srv.URL()), dial(t, srv.URL())
	b1, b2 := open(t, dirs[0]), open(t, dirs[1])
	req := func(o string) ledger.ClaimRequest {
		return ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: o}, Owner: o, TTL: time.Hour}
	}
	if c, err := a1.Claim(ctx, b1, req("w1")); err != nil || c == nil {
		t.Fatalf("claim: %v", err)
	}
	if c, err := a2.Claim(ctx, b2, req("w2")); err != nil || c != nil {
		t.Fatalf("second claim while held: %+v, %v", c, err)
	}
	if _, err := a1.Lease(ctx, b1, "A1", "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b1.Release(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "w1", RequestID: rid}, ID: "A1", Owner: "w1", Epoch: 1})
	}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if c, _ := b2.Get("A1"); c.Status != ledger.StatusClaimed {
		t.Fatalf("clone 2 before the watch: %s, want claimed (as it last saw)", c.Status)
	}

	fctx, stop := context.WithCancel(ctx)
	started, ended := make(chan error, 1), make(chan error, 1)
	go func() { ended <- a2.Follow(fctx, b2, started) }()
	if err := <-started; err != nil {
		t.Fatalf("follow: %v", err)
	}
	if c, _ := b2.Get("A1"); c.Status == ledger.StatusClaimed {
		t.Errorf("once the watch started, clone 2 still holds A1 claimed: the release made before it was not taken in")
	}
	stop()
	if err := <-ended; err != nil {
		t.Errorf("follow ended: %v", err)
	}

	// The same with a wait, on a card clone 2 saw claimed and released
	// elsewhere again; the wait's deadline is far: a claim that waits for
	// the watch or the lease fails the test by its time.
	if c, err := a1.Claim(ctx, b1, req("w1")); err != nil || c == nil || c.ClaimEpoch != 2 {
		t.Fatalf("claim again: %+v %v", c, err)
	}
	if c, err := a2.Claim(ctx, b2, req("w2")); err != nil || c != nil {
		t.Fatalf("clone 2 while held again: %+v, %v", c, err)
	}
	if _, err := a1.Lease(ctx, b1, "A1", "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return b1.Release(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "w1", RequestID: rid}, ID: "A1", Owner: "w1", Epoch: 2})
	}); err != nil {
		t.Fatalf("release: %v", err)
	}
	c, err := a2.ClaimWait(ctx, b2, req("w2"), time.Hour)
	if err != nil || c == nil || c.ClaimEpoch != 3 {
		t.Fatalf("claim --wait after the release elsewhere: %+v, %v", c, err)
	}
}
