package proof

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
	"github.com/bl-backlog/bl/ledger"
)

// arbiterRace is the size of one arbiter proof run.
type arbiterRace struct {
	Clones, Procs, Cards int
	TTL                  time.Duration
	Stops, Kills         int  // SIGSTOPs past the TTL, SIGKILLs of clients
	Restarts             int  // the server killed and restarted (file store)
	Daemons              bool // each clone's calls go through its bl daemon
}

func arbiterRaceSize() arbiterRace {
	if stress() {
		return arbiterRace{Clones: 4, Procs: 4, Cards: 120, TTL: 2 * time.Second, Stops: 12, Kills: 40, Restarts: 3}
	}
	return arbiterRace{Clones: 2, Procs: 2, Cards: 10, TTL: 2 * time.Second, Stops: 2, Kills: 4, Restarts: 1}
}

// TestArbiterClaimRace: clones × processes claim and complete every card
// through one NATS JetStream server on 127.0.0.1 (bl hands each call to
// bl-git), while clients are SIGSTOPped past their lease's TTL and
// SIGKILLed, and the server is killed and restarted on its file store.
// Every call that exits 7 (the arbiter was down) or was killed is retried
// with its request id. The checker judges what each process was told over
// the union of the clones' ledgers (what git's union merge of their
// branches folds): no card won twice at one epoch, no overlapping leases,
// every acknowledged event in the merge, every stale owner fenced, every
// card completed exactly once, and no event the merge refuses.
func TestArbiterClaimRace(t *testing.T) {
	size := arbiterRaceSize()
	srv := natstest.Start(t, t.TempDir())
	var mu sync.Mutex
	url := srv.URL()
	runArbiterRace(t, size, func() string { return url }, func(n int) {
		mu.Lock()
		defer mu.Unlock()
		srv = natstest.Restart(t, srv)
	}, nil)
}

// TestArbiterDaemonRace: the race with a bl daemon in every clone, which
// the lean bl processes' calls go through (the clients are stopped and
// killed, the daemons keep one connection across the server's restarts,
// and at each restart one daemon is killed with calls under way and
// started again).
func TestArbiterDaemonRace(t *testing.T) {
	size := arbiterRaceSize()
	size.Daemons = true
	srv := natstest.Start(t, t.TempDir())
	var mu sync.Mutex
	url := srv.URL()
	runArbiterRace(t, size, func() string { return url }, func(n int) {
		mu.Lock()
		defer mu.Unlock()
		srv = natstest.Restart(t, srv)
	}, nil)
}

// TestArbiterSyncRace: the race with clones that are git clones of one
// remote, converged through bl sync (which puts each clone's events after
// the remote's, re-stamped where they would sort earlier): the converged
// ledger folds every acknowledged decision as it was told.
func TestArbiterSyncRace(t *testing.T) {
	size := arbiterRaceSize()
	size.Restarts = 0
	srv := natstest.Start(t, t.TempDir())
	url := srv.URL()
	runArbiterRace(t, size, func() string { return url }, func(int) {}, newWorld(t, "arbsync"))
}

// TestArbiterClusterRace: the same through a 3-node JetStream cluster on
// loopback, the bucket replicated 3 ways, with one node killed mid-run
// (clients name all three).
func TestArbiterClusterRace(t *testing.T) {
	if !stress() {
		t.Skip("the cluster run is part of the full proof (BL_STRESS=1, make stress)")
	}
	size := arbiterRaceSize()
	size.Restarts = 1
	nodes := natstest.Cluster(t, t.TempDir(), 3)
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL())
	}
	// The bucket's path and replicas ride on the first URL.
	url := urls[0] + "/bl?replicas=3," + strings.Join(urls[1:], ",")
	runArbiterRace(t, size, func() string { return url }, func(int) {
		nodes[1].Shutdown() // killed for good: the other two keep the quorum
	}, nil)
}

// runArbiterRace runs the race. Without a world the clones are copies of
// one backlog, judged by the union of their ledgers (git's union merge);
// with one they are git clones of its remote, and converge through bl
// sync --push and --pull before they are judged.
func runArbiterRace(t *testing.T, size arbiterRace, url func() string, restart func(n int), w *world) {
	bl := blGitBinary(t)
	var cards []string
	for i := range size.Cards {
		cards = append(cards, fmt.Sprintf("N%03d", i))
	}
	var clones []*runner
	var gitClones []*clone
	if w == nil {
		seed := newBacklog(t, bl)
		for i, id := range cards {
			if c := seed.run("seed", runOpts{}, "create", "--id", id, "--title", "raced for", "--priority", strconv.Itoa(i%3)); c.Exit != 0 {
				t.Fatalf("create: %s", c.Stderr)
			}
		}
		for range size.Clones {
			dir := filepath.Join(t.TempDir(), ".backlog")
			if err := os.CopyFS(dir, os.DirFS(seed.dir)); err != nil {
				t.Fatal(err)
			}
			clones = append(clones, &runner{bin: bl, dir: dir})
		}
	} else {
		seed := w.seed("seed", blSync, func(cfg map[string]any) { cfg["compact_bytes"] = -1 })
		for i, id := range cards {
			seed.do("create", "--id", id, "--title", "raced for", "--priority", strconv.Itoa(i%3))
		}
		seed.publishSeed()
		for i := range size.Clones {
			c := w.clone(fmt.Sprintf("a%d", i), blSync)
			gitClones = append(gitClones, c)
			clones = append(clones, &runner{bin: bl, dir: filepath.Join(c.dir, ".backlog")})
		}
	}

	var daemons []*exec.Cmd
	if size.Daemons {
		for _, r := range clones {
			daemons = append(daemons, startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+url())))
		}
	}
	var (
		callsMu  sync.Mutex
		calls    []Call
		done     atomic.Int64
		stops    atomic.Int64
		kills    atomic.Int64
		failures []string
		ridSeq   atomic.Int64
		restarts atomic.Int64
	)
	fail := func(format string, args ...any) {
		callsMu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		callsMu.Unlock()
	}
	ttl := strconv.Itoa(int(size.TTL/time.Second)) + "s"
	// one runs a request until it has an answer: again with the same
	// request id while the arbiter is down (exit 7) or the process was
	// killed.
	one := func(r *runner, worker string, o runOpts, args ...string) Call {
		for attempt := 0; ; attempt++ {
			c := r.run(worker, o, args...)
			callsMu.Lock()
			calls = append(calls, c)
			callsMu.Unlock()
			if !(c.Killed() || (c.Exit == 7 && c.ErrorCode() == "arbiter") || (c.Exit == 5 && c.ErrorCode() == "lock_timeout")) || attempt == 200 {
				return c
			}
			o = runOpts{env: o.env} // the retry runs undisturbed
			time.Sleep(50 * time.Millisecond)
		}
	}
	env := func() []string { return []string{"BL_ARBITER=" + url()} }
	deadline := time.Now().Add(4 * time.Minute)
	if stress() {
		deadline = time.Now().Add(15 * time.Minute)
	}
	worker := func(r *runner, name string, rng *rand.Rand) {
		for done.Load() < int64(size.Cards) && time.Now().Before(deadline) {
			o := runOpts{env: env()}
			if kills.Load() < int64(size.Kills) && rng.IntN(4) == 0 {
				kills.Add(1)
				o.fault, o.delay = killFault, time.Duration(rng.IntN(40))*time.Millisecond
			}
			rid := fmt.Sprintf("%s-%d", name, ridSeq.Add(1))
			c := one(r, name, o, "claim", "--owner", name, "--ttl", ttl, "--json", "--request-id", rid)
			if c.Exit != 0 {
				fail("%s: claim: exit %d: %s", name, c.Exit, bytes.TrimSpace(c.Stderr))
				return
			}
			out, err := parseOut(c.Stdout)
			if err != nil {
				fail("%s: claim printed %q: %v", name, c.Stdout, err)
				return
			}
			if out == nil {
				time.Sleep(100 * time.Millisecond) // leases of stopped owners run out
				continue
			}
			epoch := strconv.FormatInt(out.ClaimEpoch, 10)
			hb := one(r, name, runOpts{env: env()}, "heartbeat", "--id", out.ID, "--owner", name, "--epoch", epoch, "--json", "--request-id", fmt.Sprintf("%s-%d", name, ridSeq.Add(1)))
			if hb.Exit == 4 {
				continue // fenced: the lease is gone, stop working on the card
			}
			o = runOpts{env: env()}
			if stops.Load() < int64(size.Stops) && rng.IntN(3) == 0 {
				stops.Add(1)
				o.fault, o.delay, o.hold = stopFault, time.Duration(rng.IntN(30))*time.Millisecond, size.TTL+time.Second
			} else if kills.Load() < int64(size.Kills) && rng.IntN(4) == 0 {
				kills.Add(1)
				o.fault, o.delay = killFault, time.Duration(rng.IntN(40))*time.Millisecond
			}
			cc := one(r, name, o, "complete", "--id", out.ID, "--owner", name, "--epoch", epoch, "--json", "--request-id", fmt.Sprintf("%s-%d", name, ridSeq.Add(1)))
			if cc.Stopped {
				// Back from past the TTL: a write at the old epoch must
				// be fenced once another owner's claim was acknowledged.
				one(r, name, runOpts{env: env()}, "heartbeat", "--id", out.ID, "--owner", name, "--epoch", epoch, "--json", "--request-id", fmt.Sprintf("%s-%d", name, ridSeq.Add(1)))
			}
			switch {
			case cc.Exit == 0:
				done.Add(1)
			case cc.Exit == 4:
				// fenced or refused: another owner has the card now
			default:
				fail("%s: complete %s: exit %d: %s", name, out.ID, cc.Exit, bytes.TrimSpace(cc.Stderr))
				return
			}
		}
	}
	var wg sync.WaitGroup
	for ci, r := range clones {
		for p := range size.Procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker(r, fmt.Sprintf("c%dp%d", ci, p), rand.New(rand.NewPCG(uint64(ci), uint64(p))))
			}()
		}
	}
	// The server goes down at evenly spread points of the run.
	stopRestarts := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for n := 1; n <= size.Restarts; n++ {
			for done.Load() < int64(n*size.Cards/(size.Restarts+1)) {
				select {
				case <-stopRestarts:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
			restart(n)
			restarts.Add(1)
			if size.Daemons {
				// A daemon killed with calls under way, and started again.
				i := n % len(daemons)
				_ = daemons[i].Process.Kill()
				_ = daemons[i].Wait()
				d, err := tryStartDaemon(bl, filepath.Dir(clones[i].dir), blEnv("BL_ARBITER="+url()))
				if err != nil {
					fail("bl daemon: %v", err)
					continue
				}
				t.Cleanup(func() { _ = d.Process.Kill(); _ = d.Wait() })
				daemons[i] = d
			}
		}
	}()
	start := time.Now()
	wg.Wait()
	close(stopRestarts)
	rwg.Wait()
	elapsed := time.Since(start)
	for _, f := range failures {
		t.Error(f)
	}

	var merged []byte
	if w == nil {
		merged = unionLedgers(t, clones)
	} else {
		// Every clone pushes in turn, then the first pulls what came after.
		for _, c := range gitClones {
			c.mustBL("sync", "--push")
		}
		gitClones[0].mustBL("sync", "--pull")
		var err error
		if merged, err = os.ReadFile(filepath.Join(clones[0].dir, ledger.LedgerFile)); err != nil {
			t.Fatal(err)
		}
	}
	rep := Check(History{Calls: calls, Ledger: merged, Cards: cards, AllDone: len(failures) == 0})
	for _, v := range rep.Violations {
		if w != nil && v.Kind == KindAckOrder {
			// bl sync puts a clone's events after the remote's, re-stamped
			// (docs/SYNC.md): real time across clones is not the merged
			// order, and the fold does not depend on it.
			continue
		}
		t.Errorf("violation: %s", v)
	}
	if os.Getenv("ARB_DEBUG") != "" && len(rep.Violations) > 0 {
		for _, l := range bytes.SplitAfter(merged, []byte("\n")) {
			if e, err := ledger.DecodeLine(l); err == nil && e.Op != "create" {
				t.Logf("%s %s %s %s owner=%s epoch=%d rid=%s ev=%d", e.At.Format("05.000000"), e.ID[:6], e.Op, e.Card, e.Owner, e.Epoch, e.RequestID, e.ExpectVersion)
			}
		}
		for _, c := range calls {
			if c.Op == "claim" {
				t.Logf("call %s %s exit=%d killed=%v %s-%s out=%.80s", c.Worker, c.RequestID, c.Exit, c.Killed(), c.Start.Format("05.000000"), c.End.Format("05.000000"), bytes.TrimSpace(c.Stdout))
			}
		}
	}
	t.Logf("arbiter race: %d clones x %d processes, %d cards, %d calls in %s: %d claims acknowledged, %d stopped past the TTL, %d killed, %d server restarts, %d stale calls (%d fenced)",
		size.Clones, size.Procs, size.Cards, len(calls), elapsed.Round(time.Millisecond), rep.Claims, rep.Stopped, rep.Killed, restarts.Load(), rep.Stale, rep.Fenced)
}

// unionLedgers is the union of the clones' ledgers, each event once, in
// (time, id) order: what git's union merge of their branches folds.
func unionLedgers(t *testing.T, clones []*runner) []byte {
	t.Helper()
	type line struct {
		e   *ledger.Event
		raw []byte
	}
	seen := map[string]bool{}
	var all []line
	for _, r := range clones {
		data, err := os.ReadFile(filepath.Join(r.dir, ledger.LedgerFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			e, err := ledger.DecodeLine(l)
			if err != nil {
				t.Fatalf("%s: %v", r.dir, err)
			}
			if !seen[e.ID] {
				seen[e.ID] = true
				all = append(all, line{e, l})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if c := all[i].e.At.Compare(all[j].e.At); c != 0 {
			return c < 0
		}
		return all[i].e.ID < all[j].e.ID
	})
	var out []byte
	for _, l := range all {
		out = append(out, l.raw...)
	}
	return out
}
