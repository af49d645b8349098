package proof

import (
	"bytes"
	"errors"
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
