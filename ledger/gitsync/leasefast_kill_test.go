//go:build unix

package gitsync

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// A bl process killed with SIGKILL where a crash could cut the push
// without a fetch short: after building the commit, before the push; and
// after the push landed, before the local append. The process is this
// test binary run again (killedComplete); the next command, a retry with
// the same request id, lands the completion exactly once, here and on
// the remote.
func TestFastCompleteKill9(t *testing.T) {
	for _, at := range []string{"before-push", "after-push"} {
		t.Run(at, func(t *testing.T) {
			f := newFastWorld(t, nil)
			cmd := exec.Command(os.Args[0], "-test.run=^TestKilledCompleteProcess$")
			cmd.Env = append(os.Environ(), "BL_TEST_KILLED_COMPLETE="+at, "BL_TEST_DIR="+f.da,
				"BL_TEST_CARD="+f.card.ID, "BL_TEST_EPOCH="+strconv.FormatInt(f.card.ClaimEpoch, 10))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the complete was not killed: %v\n%s", err, out)
			}
			want := map[string]int{"before-push": 0, "after-push": 1}[at]
			if n := branchOps(f.world, f.card.ID, ledger.OpComplete); n != want {
				t.Fatalf("the remote branch holds %d completions after the kill, want %d", n, want)
			}
			a := open(t, f.da) // as the next process opens it
			f.a = a
			c, err := f.complete(f.syncer(t), "done-1")
			if err != nil || c.Status != ledger.StatusDone {
				t.Fatal(c.Status, err)
			}
			f.converged(t)
		})
	}
}

// TestKilledCompleteProcess is TestFastCompleteKill9's bl process: it
// completes the card through the remote and kills itself at the point
// BL_TEST_KILLED_COMPLETE names. Run alone, it does nothing.
func TestKilledCompleteProcess(t *testing.T) {
	at := os.Getenv("BL_TEST_KILLED_COMPLETE")
	if at == "" {
		return
	}
	epoch, _ := strconv.ParseInt(os.Getenv("BL_TEST_EPOCH"), 10, 64)
	f := &fastWorld{da: os.Getenv("BL_TEST_DIR"), card: &ledger.Card{ID: os.Getenv("BL_TEST_CARD"), ClaimEpoch: epoch}}
	f.a = open(t, f.da)
	s := f.syncer(t)
	kill := func() bool {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if at == "before-push" {
		s.beforeFastPush = kill
	} else {
		s.afterFastPush = kill
	}
	_, err := f.complete(s, "done-1")
	t.Fatalf("not killed: %v", err)
}
