package proof

import (
	"fmt"
	"sort"
	"sync"
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
		Deadline:    2 * time.Minute,
		Seed:        uint64(time.Now().UnixNano()),
	}
	if stress() {
		f.Agents, f.Cards, f.Pausers = 64, 400, 16
		f.LockTimeout = 2 * time.Second
		f.Deadline = 20 * time.Minute
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
		t.Errorf("the fleet did not complete all %d cards within %s (corrupt backlog: %v)", f.Cards, f.Deadline, run.corrupt)
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
		Deadline:    time.Minute,
		Seed:        uint64(time.Now().UnixNano()),
	}
	if stress() {
		f.Agents, f.Cards = 64, 200
		f.Deadline = 10 * time.Minute
	}
	return f
}

// TestRaceBrokenLockCaught runs the same kind of fleet against a bl built
// with -tags bl_brokenlock, whose lock does nothing, with every agent racing
// for the same card. The checker must catch a lease or durability violation:
// this is what shows it can see one.
func TestRaceBrokenLockCaught(t *testing.T) {
	bin := blBinary(t, tagsBrokenLock)
	f := contendedFleet()
	// Without the lock, bl still notices most interleavings (the ledger
	// changed between its read and its write) and refuses; a double write
	// needs two processes between their last look at the ledger and their
	// write at once. A handful of agents let go together race closest.
	f.Agents, f.Cards, f.Deadline = 4, 60, 30*time.Second
	budget := 2 * time.Minute
	start := time.Now()
	for attempt := 1; time.Since(start) < budget; attempt++ {
		run := f.run(t, bin)
		r := Check(run.history())
		safety := r.Safety()
		t.Logf("broken lock, attempt %d: agents=%d cards=%d finished=%v corrupt=%v %s safety-violations=%d time=%s",
			attempt, f.Agents, f.Cards, run.finished, run.corrupt, r.Summary(), len(safety), run.elapsed.Round(time.Millisecond))
		if len(safety) > 0 {
			// The most telling first: two agents told they won one card.
			sort.SliceStable(safety, func(i, j int) bool {
				return safety[i].Kind == KindDoubleClaim && safety[j].Kind != KindDoubleClaim
			})
			for i, v := range safety {
				if i == 10 {
					t.Logf("... and %d more", len(safety)-10)
					break
				}
				t.Logf("checker caught: %s", v)
			}
			t.Logf("broken lock caught after %d attempt(s) in %s (%d other violations: lock refusals and a backlog that no longer opens)",
				attempt, time.Since(start).Round(time.Millisecond), len(r.Violations)-len(safety))
			return
		}
		f.Seed++
	}
	t.Fatalf("in %s the checker found no violation in fleets whose lock does nothing", budget)
}

// TestRaceContended runs the fleet of TestRaceBrokenLockCaught, every agent
// claiming one card at the same moment, against the real bl: with the lock
// in place the same contention must yield nothing for the checker.
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
		t.Errorf("the fleet did not complete all %d cards within %s", f.Cards, f.Deadline)
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
