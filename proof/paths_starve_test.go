package proof

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// TestHostileGlobsDoNotStarveWriters: a held card and a claimable card
// whose globs are the worst pair for a recursion on "**" (15 each, the
// most the segment cap lets a writer set; the old recursion took 47 s on
// them, under the lock). While bl claim decides them, another writer with
// the default lock timeout still gets its turn, and the claim itself
// finishes with the card it may take. The criteria are outcomes, not
// times: the other writer is started once the claim holds the lock (or is
// done), and must succeed. (Before the overlap was a product of automata,
// already the create of the candidate did not finish: it prints the card's
// standing, which decides the overlap too, and ignored SIGTERM.)
func TestHostileGlobsDoNotStarveWriters(t *testing.T) {
	r := newBacklog(t, blBinary(t, tagsNone))
	k := strings.Repeat("**/x/", 15)
	mustRun(t, r, "create", "--id", "H", "--title", "held", "--paths", k+"*.a")
	mustRun(t, r, "claim", "--owner", "w1", "--id", "H")
	mustRun(t, r, "create", "--id", "C", "--title", "candidate", "--paths", k+"*.b")

	claim := exec.Command(r.bin, "claim", "--owner", "w2", "--json", "--dir", r.dir)
	var out, errb bytes.Buffer
	claim.Stdout, claim.Stderr, claim.Env = &out, &errb, blEnv()
	if err := claim.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- claim.Wait() }()
	t.Cleanup(func() {
		if claim.ProcessState == nil {
			_ = claim.Process.Kill()
			<-done
		}
	})
	// Wait until the claim holds the lock or has finished.
	var claimErr error
	finished := false
wait:
	for {
		select {
		case claimErr = <-done:
			finished = true
			break wait
		default:
		}
		if lockHeld(t, filepath.Join(r.dir, ledger.LockFile)) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if c := r.run("other", runOpts{}, "create", "--title", "another writer"); c.Exit != 0 {
		t.Fatalf("a second writer was starved while bl claim decided two globs: exit %d: %s", c.Exit, c.Stderr)
	}
	if !finished {
		claimErr = <-done
	}
	if claimErr != nil || !strings.Contains(out.String(), `"id": "C"`) {
		t.Fatalf("claim: %v\n%s%s", claimErr, out.Bytes(), errb.Bytes())
	}
}

func mustRun(t *testing.T, r *runner, args ...string) {
	t.Helper()
	if c := r.run("setup", runOpts{}, args...); c.Exit != 0 {
		t.Fatalf("bl %s: exit %d: %s", strings.Join(args, " "), c.Exit, c.Stderr)
	}
}

// lockHeld reports whether another process holds the backlog's lock.
func lockHeld(t *testing.T, path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return false
}

// TestHostileGlobsStopOnSignal: reservations whose overlaps would take
// most of an hour to decide (10 held cards of 256 costly globs each against
// a candidate of 256: 655,360 pairs of about 250,000 table cells).
// bl ready and bl claim stop on SIGTERM — the claim after the lock is let
// go, as interrupted, with nothing appended — instead of running on for a
// caller that gave up.
func TestHostileGlobsStopOnSignal(t *testing.T) {
	r := newBacklog(t, blBinary(t, tagsNone))
	glob := func(prefix, body, suffix string, n int) []string {
		args := []string{}
		for j := range n {
			args = append(args, "--paths", fmt.Sprintf("%s/%s.%s%d", prefix, strings.Repeat(body, 240), suffix, j))
		}
		return args
	}
	// The candidate first: while nothing is held, its standing is cheap.
	mustRun(t, r, append([]string{"create", "--id", "C", "--title", "candidate"}, glob("*", "*b", "y", 256)...)...)
	for i := range 10 {
		id := fmt.Sprintf("H%d", i)
		mustRun(t, r, append([]string{"create", "--id", id, "--title", "held", "--priority", "9"}, glob(fmt.Sprintf("h%d", i), "*a", "x", 256)...)...)
		mustRun(t, r, "claim", "--owner", "w1", "--id", id)
	}
	before, err := os.ReadFile(filepath.Join(r.dir, ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ready", "--json"}, {"claim", "--owner", "w2", "--json"}} {
		cmd := exec.Command(r.bin, append(args, "--dir", r.dir)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.Env = &out, &errb, blEnv()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		// Let it start deciding: the claim once it has held the lock and
		// let it go (the pairs past its limit are decided unlocked), bl
		// ready after a moment (a signal before bl installs its handler
		// kills it, which stops it as well).
		if args[0] == "claim" {
			// (At most a couple of seconds of probing: a signal at any
			// point must stop it, this only aims at the unlocked part.)
			seen := false
			for i := 0; i < 2000 && (!seen || lockHeld(t, filepath.Join(r.dir, ledger.LockFile))); i++ {
				seen = seen || lockHeld(t, filepath.Join(r.dir, ledger.LockFile))
				select {
				case <-done:
					t.Fatalf("claim finished: %s%s", out.Bytes(), errb.Bytes())
				default:
				}
				time.Sleep(time.Millisecond)
			}
		} else {
			time.Sleep(100 * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if code := cmd.ProcessState.ExitCode(); code != 1 && code != -1 {
			t.Fatalf("bl %v after SIGTERM: exit %d: %s%s", args, code, out.Bytes(), errb.Bytes())
		}
	}
	after, err := os.ReadFile(filepath.Join(r.dir, ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the interrupted claim appended %q", after[len(before):])
	}
}
