//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// superviseBench measures bl run: one supervisor's claim→complete cycle
// around a no-op command, next to what starting that command costs by
// itself, and 32 supervisors draining no-op cards together.
func superviseBench(bl, dir string) {
	noop, err := exec.LookPath("true")
	must(err)
	oneSupervisor(bl, dir, noop)
	supervisorFleet(bl, dir, noop)
}

// oneSupervisor runs one supervisor over no-op cards, one after another,
// and sets its cost per card against starting the command alone.
func oneSupervisor(bl, dir, noop string) {
	const cards = 300
	one := filepath.Join(dir, "run1", ".backlog")
	generate(one, cards, cards)
	start := time.Now()
	runCmd(bl, one, "run", "--owner", "w", "--loop", "--", noop)
	perCard := time.Since(start) / cards
	start = time.Now()
	for range cards {
		must(exec.Command(noop).Run())
	}
	perStart := time.Since(start) / cards
	over := perCard - perStart
	add("bl run: one supervisor's claim→run→complete per no-op card", ms(perCard), "", "")
	add("  of which bl, beyond starting the command ("+ms(perStart)+")", ms(over), "≤ 1.5 ms", verdict(over <= 1500*time.Microsecond))
}

// supervisorFleet runs 32 supervisors over 2,000 no-op cards at once.
func supervisorFleet(bl, dir, noop string) {
	const n, many = 32, 2000
	fleet := filepath.Join(dir, "run32", ".backlog")
	generate(fleet, many, many)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runCmd(bl, fleet, "run", "--owner", fmt.Sprintf("w%02d", w), "--loop", "--lock-timeout", "60s", "--", noop)
		}()
	}
	wg.Wait()
	d := time.Since(start)
	completes, problems := fleetOutcome(fleet)
	if completes != many {
		fmt.Fprintf(os.Stderr, "only %d of %d cards completed\n", completes, many)
		problems++
	}
	rate := float64(completes) / d.Seconds()
	add(fmt.Sprintf("%d bl run supervisors, %d no-op cards: cards/s (double runs)", n, many), fmt.Sprintf("%.0f/s (%d)", rate, problems),
		"≥ 500 cards/s, 0 double", verdict(rate >= 500 && problems == 0))
}

// fleetOutcome reads from the ledger how many cards were completed, and
// the problems: conflicts, failures, and a card run twice.
func fleetOutcome(fleet string) (completes, problems int) {
	claims := map[string]int{}
	b, err := ledger.Open(fleet, ledger.Options{})
	must(err)
	_, err = b.History(ledger.HistoryFilter{Ops: []ledger.Op{ledger.OpClaim, ledger.OpComplete, ledger.OpFail}}, func(e *ledger.Event, conflict *ledger.Conflict) error {
		switch {
		case conflict != nil:
			fmt.Fprintf(os.Stderr, "CONFLICT: %s of %s: %s\n", e.Op, e.Card, conflict.Reason)
			problems++
		case e.Op == ledger.OpClaim:
			claims[e.Card]++
		case e.Op == ledger.OpComplete:
			completes++
		default:
			problems++
		}
		return nil
	})
	must(err)
	b.Close()
	for _, k := range claims {
		if k > 1 {
			problems += k - 1 // a card run twice
		}
	}
	return completes, problems
}
