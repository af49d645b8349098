package proof

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// fleet describes agents working one backlog the way the README's agent loop
// does: claim, heartbeat, complete (sometimes release), each step one bl
// process, while faults hit the processes and some agents hang.
type fleet struct {
	Agents      int
	Cards       int
	Pausers     int           // agents that sometimes hang past their lease and come back
	PauseProb   float64       // chance a pauser hangs on a card it claimed
	TTL         time.Duration // lease length
	LockTimeout time.Duration // --lock-timeout of every call
	StopProb    float64       // chance a process is SIGSTOPped mid-flight
	KillProb    float64       // chance a process is SIGKILLed mid-flight
	MaxHold     time.Duration // longest SIGSTOP
	ByID        bool          // in rounds, every agent claims the first ready card by --id at the same moment
	Seed        uint64
}

// fleetRun is what a fleet run left behind.
type fleetRun struct {
	calls    []Call
	cards    []string
	finished bool // every card done before the deadline
	corrupt  bool // some call reported a corrupt backlog
	pauses   int  // times an agent hung past its lease
	elapsed  time.Duration
	ledger   []byte
	broken   int64 // size of ledger.jsonl.broken
}

func (r *fleetRun) history() History {
	return History{Calls: r.calls, Ledger: r.ledger, Cards: r.cards, AllDone: r.finished}
}

// run creates the cards, runs the agents until every card is done (or the
// deadline, or a corrupt backlog) and collects every call.
func (f fleet) run(t testing.TB, bin string) *fleetRun {
	t.Helper()
	r := newBacklog(t, bin)
	ids := &requestIDs{prefix: "r"}
	out := &fleetRun{}
	setup := func(args ...string) {
		rid := ids.next("setup")
		out.calls = append(out.calls, r.mustRun(t, append(args, "--json", "--request-id", rid, "--actor", "setup")...))
	}
	for i := 0; i < f.Cards; i++ {
		id := fmt.Sprintf("C%03d", i)
		args := []string{"create", "--id", id, "--title", "card " + id, "--priority", strconv.Itoa(i % 4)}
		if i >= 4 && i%4 == 0 {
			// Some cards wait on others, so the claimable set changes
			// as cards are completed.
			args = append(args, "--depends-on", fmt.Sprintf("C%03d,C%03d", i-4, i-2))
		}
		setup(args...)
		out.cards = append(out.cards, id)
	}

	// No budget of its own: a fleet runs until every card is done.
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	sh := &shared{f: f, r: r, ids: ids, cancel: cancel}
	sh.rounds.cond = sync.NewCond(&sh.rounds.mu)
	agents := make([]*agent, f.Agents)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range agents {
		a := &agent{sh: sh, name: fmt.Sprintf("w%d", i+1), pauser: i < f.Pausers,
			rng: rand.New(rand.NewPCG(f.Seed, uint64(i)))}
		agents[i] = a
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.loop(ctx)
		}()
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	out.finished = ctx.Err() == nil && sh.done.Load()
	out.corrupt = sh.corrupt.Load()
	for _, a := range agents {
		out.calls = append(out.calls, a.calls...)
		out.pauses += a.pauses
	}
	out.ledger = r.ledgerBytes(t)
	if fi, err := os.Stat(filepath.Join(r.dir, ledger.BrokenFile)); err == nil {
		out.broken = fi.Size()
	}
	return out
}

// shared is what the agents of one run share.
type shared struct {
	f       fleet
	r       *runner
	ids     *requestIDs
	cancel  context.CancelFunc
	done    atomic.Bool // some agent saw every card done
	corrupt atomic.Bool
	rounds  rounds
}

// rounds lines the agents up so that they all claim one card at the same
// moment: the last agent to arrive picks the card and releases the others.
type rounds struct {
	mu      sync.Mutex
	cond    *sync.Cond
	arrived int
	gen     int
	target  string
	over    bool
}

// wait returns once all n agents have called it.
func (r *rounds) wait(n int) {
	r.next(n, func() (string, bool) { return r.target, r.over })
}

// next waits for all n agents and returns the card of the round, "" when
// nothing is claimable right now, or ok=false when the run is over.
func (r *rounds) next(n int, pick func() (target string, over bool)) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gen := r.gen
	r.arrived++
	if r.arrived == n {
		r.target, r.over = pick()
		r.arrived = 0
		r.gen++
		r.cond.Broadcast()
	} else {
		for gen == r.gen {
			r.cond.Wait()
		}
	}
	return r.target, !r.over
}

// agent is one worker of the fleet. Its calls are its own until the run
// ends, so no locking is needed.
type agent struct {
	sh     *shared
	name   string
	pauser bool
	rng    *rand.Rand
	calls  []Call
	pauses int
}

func (a *agent) call(o runOpts, args ...string) Call {
	c := a.sh.r.run(a.name, o, args...)
	a.calls = append(a.calls, c)
	if c.Exit == 6 {
		// Nothing more can be learned from a backlog that no longer
		// opens; stop the fleet and let the checker explain.
		a.sh.corrupt.Store(true)
		a.sh.cancel()
	}
	return c
}

// fault draws the fault for a process.
func (a *agent) fault() runOpts {
	f := a.sh.f
	x := a.rng.Float64()
	delay := time.Duration(a.rng.Int64N(int64(10 * time.Millisecond))) // anywhere in a bl process's life
	switch {
	case x < f.KillProb:
		return runOpts{fault: killFault, delay: delay}
	case x < f.KillProb+f.StopProb:
		return runOpts{fault: stopFault, delay: delay, hold: 20*time.Millisecond + time.Duration(a.rng.Int64N(int64(f.MaxHold)))}
	}
	return runOpts{}
}

// mutate runs a mutation under a fresh request id. An agent that hears
// nothing back (its process was killed) or times out on the lock retries
// with the same request id, so a retry can only replay, never repeat.
func (a *agent) mutate(ctx context.Context, actor string, args ...string) (Call, bool) {
	return a.mutateGated(ctx, nil, actor, args...)
}

// mutateGated is mutate whose first attempt is held stopped until gate
// returns.
func (a *agent) mutateGated(ctx context.Context, gate func(), actor string, args ...string) (Call, bool) {
	rid := a.sh.ids.next(actor)
	args = append(args, "--json", "--request-id", rid, "--actor", actor, "--lock-timeout", a.sh.f.LockTimeout.String())
	var c Call
	for attempt := 0; attempt < 50 && (ctx.Err() == nil || gate != nil); attempt++ {
		o := runOpts{}
		switch {
		case gate != nil:
			o.gate, gate = gate, nil
		case attempt < 2:
			o = a.fault()
		}
		c = a.call(o, args...)
		if !c.Killed() && c.Exit != 5 {
			return c, c.Exit == 0
		}
	}
	return c, false
}

func (a *agent) ttl() string { return a.sh.f.TTL.String() }

// loop is the agent: claim, work, repeat until every card is done.
func (a *agent) loop(ctx context.Context) {
	for {
		// In rounds every agent leaves together, when the round says so.
		if !a.sh.f.ByID && (ctx.Err() != nil || a.sh.done.Load()) {
			return
		}
		args := []string{"claim", "--owner", a.name, "--ttl", a.ttl()}
		if a.sh.f.ByID {
			id, ok := a.sh.rounds.next(a.sh.f.Agents, func() (string, bool) {
				if ctx.Err() != nil {
					return "", true
				}
				if id := a.firstReady(); id != "" {
					return id, false
				}
				return "", a.allDone()
			})
			if !ok {
				return
			}
			if id == "" {
				a.idle(ctx)
				continue
			}
			args = append(args, "--id", id)
		}
		var gate func()
		if a.sh.f.ByID {
			// Every agent starts its claim stopped; the last one to
			// get there lets them all go at once.
			gate = func() { a.sh.rounds.wait(a.sh.f.Agents) }
		}
		c, ok := a.mutateGated(ctx, gate, a.name, args...)
		if !ok {
			continue
		}
		card, err := parseOut(c.Stdout)
		if err != nil {
			continue // the checker reports it
		}
		if card == nil {
			if !a.sh.f.ByID && a.allDone() {
				return
			}
			a.idle(ctx)
			continue
		}
		if card.ClaimOwner != a.name {
			continue // not ours after all (the checker judges the answer)
		}
		a.work(ctx, card.ID, card.ClaimEpoch)
	}
}

// work does a claimed card: a few heartbeats, then complete (or, now and
// then, release). A pauser may instead hang past its lease.
func (a *agent) work(ctx context.Context, id string, epoch int64) {
	if a.pauser && a.rng.Float64() < a.sh.f.PauseProb {
		a.hang(ctx, id, epoch)
		return
	}
	ep := strconv.FormatInt(epoch, 10)
	for n := a.rng.IntN(3); n > 0; n-- {
		if _, ok := a.mutate(ctx, a.name, "heartbeat", "--id", id, "--owner", a.name, "--epoch", ep); !ok {
			return // fenced or no answer: stop working on the card
		}
	}
	if a.rng.Float64() < 0.1 {
		a.mutate(ctx, a.name, "release", "--id", id, "--owner", a.name, "--epoch", ep, "--reason", "handing back")
		return
	}
	a.mutate(ctx, a.name, "complete", "--id", id, "--owner", a.name, "--epoch", ep, "--note", "done by "+a.name)
}

// hang is an agent that stops responding past its lease (a laptop lid
// closed, a SIGSTOPped shell). Another agent takes the card meanwhile, then
// the hung agent comes back and carries on with its old epoch: every one of
// its calls must be fenced.
func (a *agent) hang(ctx context.Context, id string, epoch int64) {
	a.pauses++
	sleepCtx(ctx, a.sh.f.TTL+300*time.Millisecond) // only to let the lease run out
	if ctx.Err() != nil {
		return
	}
	other := a.name + "b"
	c, ok := a.mutate(ctx, other, "claim", "--owner", other, "--id", id, "--ttl", a.ttl())
	var taken *outCard
	if ok {
		if card, err := parseOut(c.Stdout); err == nil && card != nil && card.ClaimOwner == other {
			taken = card
		}
	}
	ep := strconv.FormatInt(epoch, 10)
	if _, ok := a.mutate(ctx, a.name, "heartbeat", "--id", id, "--owner", a.name, "--epoch", ep); ok {
		// Nobody took the card after all: the lease was still ours.
		a.mutate(ctx, a.name, "complete", "--id", id, "--owner", a.name, "--epoch", ep)
		return
	}
	a.mutate(ctx, a.name, "release", "--id", id, "--owner", a.name, "--epoch", ep)
	if taken != nil {
		a.mutate(ctx, other, "complete", "--id", id, "--owner", other, "--epoch", strconv.FormatInt(taken.ClaimEpoch, 10))
	}
	// Completing a card someone else already finished is fenced too.
	a.mutate(ctx, a.name, "complete", "--id", id, "--owner", a.name, "--epoch", ep)
}

// firstReady returns the first card in claim order that is claimable now,
// or "".
func (a *agent) firstReady() string {
	c := a.call(runOpts{}, "ready", "--json", "--limit", "1")
	var cards []outCard
	if c.Exit != 0 || json.Unmarshal(c.Stdout, &cards) != nil || len(cards) == 0 {
		return ""
	}
	return cards[0].ID
}

// allDone asks bl whether every card is done.
func (a *agent) allDone() bool {
	if a.sh.done.Load() {
		return true
	}
	c := a.call(runOpts{}, "stats", "--json")
	s, err := parseStats(c.Stdout)
	if c.Exit == 0 && err == nil && s.Cards == a.sh.f.Cards && s.ByStatus["done"] == s.Cards {
		a.sh.done.Store(true)
		return true
	}
	return false
}

// idle waits a little before looking for work again.
func (a *agent) idle(ctx context.Context) {
	sleepCtx(ctx, 10*time.Millisecond+time.Duration(a.rng.Int64N(int64(time.Duration(a.sh.f.Agents)*2*time.Millisecond))))
}
