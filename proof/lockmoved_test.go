package proof

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Build tag of a bl whose lock is kept on the lock file as it was opened:
// no directory lock and no check that the file is still at its path (see
// lock/stale_on.go).
const tagsStaleLock = "bl_stalelock"

// lockMoves are the things that happen to .backlog/lock behind a holder's
// back: git clean -X or a user deleting a "stale" lock, and a pull or a
// checkout putting another file at its path.
var lockMoves = []struct {
	name string
	move func(t testing.TB, path string)
}{
	{"deleted", func(t testing.TB, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}},
	{"replaced", func(t testing.TB, path string) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}},
}

// TestLockFileMovedCaught is the negative control of TestLockFileMovedHolds,
// with nothing left to chance: against a bl built with -tags bl_stalelock
// (its lock is only the lock file as opened), a claimer parks itself at
// before-write holding the lock, the lock file is deleted or replaced, and
// a second claimer of the same card is started. It opens the new file,
// locks it and parks at before-write too; let go together, both append a
// claim at epoch 1 and the checker must report the double claim, every
// round.
func TestLockFileMovedCaught(t *testing.T) {
	bin := blBinary(t, tagsStaleLock+","+tagsFailpoints)
	rounds := 1
	if stress() {
		rounds = 10
	}
	for _, m := range lockMoves {
		for round := 1; round <= rounds; round++ {
			p := movedLockClaims(t, bin, m.move, 2, 0)
			t.Logf("stale lock, file %s, round %d: parked together=%d exits=%v %s", m.name, round, p.parked, p.exits, p.report.Summary())
			if p.parked != 2 {
				t.Fatalf("file %s, round %d: with the lock kept on the old file both claimers should reach before-write, %d did", m.name, round, p.parked)
			}
			if p.report.Count(KindDoubleClaim) == 0 {
				for _, v := range p.report.Violations {
					t.Logf("violation: %s", v)
				}
				t.Fatalf("file %s, round %d: two holders of a lock on two lock files and the checker found no double claim", m.name, round)
			}
		}
	}
}

// TestLockFileMovedHolds: a claimer parked at before-write holds the lock
// while its lock file is deleted or replaced. A second claimer of the same
// card, started after that, must not get past the lock while the first is
// parked; let go, the first wins and the second is refused, and the
// checker finds nothing. With the fault TestLockFileMovedCaught injects
// (or the directory lock taken away) the second parks beside the first
// and this test fails every run.
func TestLockFileMovedHolds(t *testing.T) {
	bin := blBinary(t, tagsFailpoints)
	for _, m := range lockMoves {
		p := movedLockClaims(t, bin, m.move, 1, time.Second)
		t.Logf("intact lock, file %s: parked together=%d exits=%v %s", m.name, p.parked, p.exits, p.report.Summary())
		for _, v := range p.report.Violations {
			t.Errorf("file %s: violation: %s", m.name, v)
		}
		if p.parked != 1 {
			t.Errorf("file %s: %d claimers reached before-write together, want 1: the lock must keep the second out", m.name, p.parked)
		}
		if !(p.exits == [2]int{0, 4} || p.exits == [2]int{4, 0}) {
			t.Errorf("file %s: claim exits %v, want one 0 (the winner) and one 4 (conflict)", m.name, p.exits)
		}
	}
}

// movedLockClaims creates card A in a new backlog and starts a claimer of
// it set to stop itself at before-write. Once it is parked there (holding
// the lock), move is done to the lock file and a second claimer is
// started. The second is waited for until want claimers are parked (at
// most patience) and then for hold, in which it may still park; then every
// parked claimer is let go (and any that parks later, at once), both are
// waited for and the history is checked.
func movedLockClaims(t *testing.T, bin string, move func(testing.TB, string), want int, hold time.Duration) parked {
	t.Helper()
	r := newBacklog(t, bin)
	calls := []Call{r.mustRun(t, "create", "--id", "A", "--title", "raced for", "--json", "--request-id", "create-A")}
	procs := make(chan *os.Process, 2)
	results := make([]Call, 2)
	var wg sync.WaitGroup
	done := make([]chan struct{}, 2)
	start := func(i int) {
		done[i] = make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			owner := fmt.Sprintf("w%d", i+1)
			o := runOpts{env: []string{"BL_FAILPOINT=before-write", "BL_FAILPOINT_ACTION=stop"},
				started: func(p *os.Process) { procs <- p }}
			results[i] = r.run(owner, o, "claim", "--owner", owner, "--id", "A", "--ttl", "1m",
				"--lock-timeout", "1m", "--json", "--request-id", "claim-"+owner)
		}()
	}
	deadline := time.Now().Add(patience(t))
	var ps []*os.Process
	// A claimer left parked by a failed test would never exit.
	t.Cleanup(func() {
		for _, pr := range ps {
			_ = pr.Kill()
		}
		wg.Wait()
	})
	stopped := func() int {
		n := 0
		for _, p := range ps {
			if processStopped(p.Pid) {
				n++
			}
		}
		return n
	}
	waitStarted := func(i int) {
		select {
		case p := <-procs:
			ps = append(ps, p)
		case <-done[i]:
			t.Fatalf("claimer %d did not start: %s", i+1, results[i].Stderr)
		}
	}

	start(0)
	waitStarted(0)
	for stopped() < 1 {
		select {
		case <-done[0]:
			t.Fatalf("the first claimer exited %d before it parked: %s", results[0].Exit, results[0].Stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the first claimer never parked at before-write")
		}
		time.Sleep(time.Millisecond)
	}
	move(t, filepath.Join(r.dir, ledger.LockFile))
	start(1)
	waitStarted(1)

	var p parked
	for p.parked = stopped(); p.parked < want && time.Now().Before(deadline); p.parked = stopped() {
		time.Sleep(time.Millisecond)
	}
	for end := time.Now().Add(hold); p.parked < 2 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
		p.parked = max(p.parked, stopped())
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	for {
		for _, pr := range ps {
			if processStopped(pr.Pid) {
				_ = pr.Signal(syscall.SIGCONT)
			}
		}
		select {
		case <-all:
			calls = append(calls, results...)
			p.exits = [2]int{results[0].Exit, results[1].Exit}
			p.report = Check(History{Calls: calls, Ledger: r.ledgerBytes(t)})
			return p
		case <-time.After(time.Millisecond):
		}
	}
}
