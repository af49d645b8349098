package proof

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// raceFleet is the fleet TestRace runs: CI size by default, full size with
// BL_STRESS set.
func raceFleet() fleet {
	f := fleet{
		Agents:      8,
		Cards:       80,
		Pausers:     3,
		PauseProb:   0.5,
		TTL:         time.Second,
		LockTimeout: 500 * time.Millisecond,
		StopProb:    0.04,
		KillProb:    0.04,
		MaxHold:     800 * time.Millisecond,
		Seed:        uint64(time.Now().UnixNano()),
	}
	if stress() {
		f.Agents, f.Cards, f.Pausers = 64, 400, 16
		f.LockTimeout = 2 * time.Second
	}
	return f
}

// TestRace runs a fleet of agents, each step a real bl process, with
// processes stopped (possibly holding the lock) and killed mid-flight and
// agents hanging past their leases, until every card is done. The checker
// must find nothing: no double claim, no overlapping leases, no lost
// acknowledged event, every stale owner fenced, every card done once.
func TestRace(t *testing.T) {
	f := raceFleet()
	bin := blBinary(t, tagsNone)
	run := f.run(t, bin)
	r := Check(run.history())
	t.Logf("race: agents=%d cards=%d seed=%d finished=%v pauses=%d %s broken-bytes=%d time=%s",
		f.Agents, f.Cards, f.Seed, run.finished, run.pauses, r.Summary(), run.broken, run.elapsed.Round(time.Millisecond))
	for i, v := range r.Violations {
		if i == 50 {
			t.Errorf("... and %d more", len(r.Violations)-50)
			break
		}
		t.Errorf("violation: %s", v)
	}
	if !run.finished {
		t.Errorf("the fleet did not complete all %d cards before the test's deadline (corrupt backlog: %v)", f.Cards, run.corrupt)
	}
	if r.Killed == 0 || r.Stopped == 0 || r.Stale == 0 {
		t.Errorf("the run exercised too little: killed=%d stopped=%d stale=%d", r.Killed, r.Stopped, r.Stale)
	}
}

// contendedFleet has every agent claim the same card at the same moment,
// round after round: each claim process is started stopped and all of a
// round's are continued together.
func contendedFleet() fleet {
	f := fleet{
		Agents:      16,
		Cards:       40,
		TTL:         time.Second,
		LockTimeout: 2 * time.Second,
		StopProb:    0.02,
		KillProb:    0.02,
		MaxHold:     200 * time.Millisecond,
		ByID:        true,
		Seed:        uint64(time.Now().UnixNano()),
	}
	if stress() {
		f.Agents, f.Cards = 64, 200
	}
	return f
}

// TestRaceBrokenLockCaught is the checker's negative control, made
// deterministic: against a bl built with -tags bl_brokenlock (its lock does
// nothing) and bl_failpoints, two processes claim one card and each parks
// itself at the before-write failpoint, after it has checked the ledger and
// before it writes. Once both are parked, both have decided on the same
// state; they are let go together and both append a claim at epoch 1. The
// checker must report the double claim, every round.
func TestRaceBrokenLockCaught(t *testing.T) {
	bin := blBinary(t, tagsBrokenLock+","+tagsFailpoints)
	rounds := 3
	if stress() {
		rounds = 20
	}
	start := time.Now()
	for round := 1; round <= rounds; round++ {
		p := parkedClaims(t, bin, 2, 0)
		t.Logf("broken lock, round %d: parked together=%d exits=%v %s", round, p.parked, p.exits, p.report.Summary())
		if p.parked != 2 {
			t.Fatalf("round %d: with the lock broken both claimers should reach before-write, %d did", round, p.parked)
		}
		if p.report.Count(KindDoubleClaim) == 0 {
			for _, v := range p.report.Violations {
				t.Logf("violation: %s", v)
			}
			t.Fatalf("round %d: two claimers were let go together past a broken lock and the checker found no double claim", round)
		}
		for _, v := range p.report.Safety() {
			t.Logf("checker caught: %s", v)
		}
	}
	t.Logf("broken lock caught in %d of %d rounds in %s", rounds, rounds, time.Since(start).Round(time.Millisecond))
}

// TestRaceParkedLockHolds runs TestRaceBrokenLockCaught's rounds against a
// bl whose lock is intact: the first claimer parks at before-write holding
// the lock, and the second must not get there while it is parked (it
// waits for the lock); let go, the first wins and the second is refused.
// The checker finds nothing.
func TestRaceParkedLockHolds(t *testing.T) {
	bin := blBinary(t, tagsFailpoints)
	p := parkedClaims(t, bin, 1, time.Second)
	t.Logf("intact lock: parked together=%d exits=%v %s", p.parked, p.exits, p.report.Summary())
	for _, v := range p.report.Violations {
		t.Errorf("violation: %s", v)
	}
	if p.parked != 1 {
		t.Errorf("%d claimers reached before-write together, want 1: the lock must keep the second out", p.parked)
	}
	if !(p.exits == [2]int{0, 4} || p.exits == [2]int{4, 0}) {
		t.Errorf("claim exits %v, want one 0 (the winner) and one 4 (conflict)", p.exits)
	}
}

// parked is what parkedClaims saw.
type parked struct {
	parked int    // how many claimers were parked at before-write at once
	exits  [2]int // the claimers' exit codes
	report Report
}

// parkedClaims creates card A in a new backlog and starts two processes
// claiming it, each set to stop itself at the before-write failpoint. It
// waits until want of them are parked (at most a minute), then a further
// hold during which the other may still park, lets every parked process
// go on (and any that parks later, at once), waits for both and checks the
// history.
func parkedClaims(t *testing.T, bin string, want int, hold time.Duration) parked {
	t.Helper()
	r := newBacklog(t, bin)
	calls := []Call{r.mustRun(t, "create", "--id", "A", "--title", "raced for", "--json", "--request-id", "create-A")}
	procs := make(chan *os.Process, 2)
	results := make([]Call, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", i+1)
			o := runOpts{env: []string{"BL_FAILPOINT=before-write", "BL_FAILPOINT_ACTION=stop"},
				started: func(p *os.Process) { procs <- p }}
			results[i] = r.run(owner, o, "claim", "--owner", owner, "--id", "A", "--ttl", "1m",
				"--lock-timeout", "1m", "--json", "--request-id", "claim-"+owner)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var ps []*os.Process
	for len(ps) < 2 {
		select {
		case p := <-procs:
			ps = append(ps, p)
		case <-done:
			t.Fatalf("a claimer did not start: %s %s", results[0].Stderr, results[1].Stderr)
		}
	}
	stopped := func() int {
		n := 0
		for _, p := range ps {
			if processStopped(p.Pid) {
				n++
			}
		}
		return n
	}
	var p parked
	deadline := time.Now().Add(patience(t))
	for p.parked = stopped(); p.parked < want && time.Now().Before(deadline); p.parked = stopped() {
		time.Sleep(time.Millisecond)
	}
	for end := time.Now().Add(hold); p.parked < 2 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
		p.parked = max(p.parked, stopped())
	}
	for {
		for _, pr := range ps {
			if processStopped(pr.Pid) {
				_ = pr.Signal(syscall.SIGCONT)
			}
		}
		select {
		case <-done:
			calls = append(calls, results...)
			p.exits = [2]int{results[0].Exit, results[1].Exit}
			p.report = Check(History{Calls: calls, Ledger: r.ledgerBytes(t)})
			return p
		case <-time.After(time.Millisecond):
		}
	}
}

// TestRaceContended runs a fleet with every agent claiming one card at the
// same moment against the real bl: with the lock in place that contention
// must yield nothing for the checker.
func TestRaceContended(t *testing.T) {
	f := contendedFleet()
	run := f.run(t, blBinary(t, tagsNone))
	r := Check(run.history())
	t.Logf("contended: agents=%d cards=%d finished=%v %s time=%s",
		f.Agents, f.Cards, run.finished, r.Summary(), run.elapsed.Round(time.Millisecond))
	for _, v := range r.Violations {
		t.Errorf("violation: %s", v)
	}
	if !run.finished {
		t.Errorf("the fleet did not complete all %d cards before the test's deadline", f.Cards)
	}
}

// TestStoppedLockHolder stops a claiming bl process at a moment it holds the
// backlog lock and keeps it stopped. Other writers must wait and then give
// up with exit 5 (code lock_timeout) rather than write around it, readers
// must still read, and once the stopped process continues the card has
// exactly one owner.
func TestStoppedLockHolder(t *testing.T) {
	r := newBacklog(t, blBinary(t, tagsNone))
	start := time.Now()
	var calls []Call
	want, caught := 8, 0
	for i := 0; caught < want && i < 5*want; i++ {
		id := fmt.Sprintf("S%02d", i)
		calls = append(calls, r.mustRun(t, "create", "--id", id, "--title", "claimed by a stopped process", "--json", "--request-id", "create-"+id))
		var mu sync.Mutex
		var during []Call
		whileStopped := func() {
			var wg sync.WaitGroup
			for j := 1; j <= 4; j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					owner := fmt.Sprintf("c%d", j)
					c := r.run(owner, runOpts{}, "claim", "--owner", owner, "--id", id, "--ttl", "1m",
						"--lock-timeout", "200ms", "--json", "--request-id", fmt.Sprintf("%s-%s", owner, id))
					mu.Lock()
					during = append(during, c)
					mu.Unlock()
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := r.run("reader", runOpts{}, "list", "--json")
				mu.Lock()
				during = append(during, c)
				mu.Unlock()
			}()
			wg.Wait()
		}
		h := r.run("holder", runOpts{fault: stopHoldingLock, whileStopped: whileStopped},
			"claim", "--owner", "holder", "--id", id, "--ttl", "1m", "--json", "--request-id", "holder-"+id)
		calls = append(calls, h)
		calls = append(calls, during...)
		if h.Exit != 0 {
			t.Errorf("%s: the stopped claimer exited %d once continued: %s", id, h.Exit, h.Stderr)
		}
		if !h.Stopped {
			continue // the lock was let go before the stop took; try another card
		}
		caught++
		for _, c := range during {
			switch {
			case c.Op == "list" && c.Exit != 0:
				t.Errorf("%s: a read while the lock holder was stopped exited %d: %s", id, c.Exit, c.Stderr)
			case c.Op == "claim" && (c.Exit != 5 || c.ErrorCode() != "lock_timeout"):
				t.Errorf("%s: %s claimed while the lock holder was stopped: exit %d, want 5 lock_timeout: %s %s", id, c.Owner, c.Exit, c.Stdout, c.Stderr)
			}
		}
		// Once it is continued, the card is the stopped process's.
		late := r.run("c9", runOpts{}, "claim", "--owner", "c9", "--id", id, "--ttl", "1m", "--json", "--request-id", "c9-"+id)
		calls = append(calls, late)
		if late.Exit != 4 || late.ErrorCode() != "conflict" {
			t.Errorf("%s: a claim after the holder continued: exit %d, want 4 conflict: %s", id, late.Exit, late.Stderr)
		}
	}
	rep := Check(History{Calls: calls, Ledger: r.ledgerBytes(t)})
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	t.Logf("stopped lock holder: stopped-holding-the-lock=%d %s time=%s", caught, rep.Summary(), time.Since(start).Round(time.Millisecond))
	if caught < want {
		t.Errorf("caught a claimer holding the lock only %d times of %d", caught, want)
	}
}
