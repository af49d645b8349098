//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gofrs/flock"
)

// countSignalHandlers counts the run contexts that install the signal
// handler, and reports each installation on armed. Not parallel: it
// replaces a package variable.
func countSignalHandlers(t *testing.T) (*atomic.Int64, <-chan struct{}) {
	var n atomic.Int64
	armed := make(chan struct{}, 16)
	prev := notifyContext
	notifyContext = func(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
		ctx, stop := signal.NotifyContext(parent, sigs...)
		n.Add(1)
		armed <- struct{}{}
		return ctx, stop
	}
	t.Cleanup(func() { notifyContext = prev })
	return &n, armed
}

// TestHotCommandsCatchSignalsOnlyWhenWaiting: the agents' commands (the
// hand-parsed writes and version, and the reads ready, show and list)
// install no signal handler when they do not wait (it costs a short call
// about a fifth of its CPU); the other commands still install theirs for
// the whole run.
func TestHotCommandsCatchSignalsOnlyWhenWaiting(t *testing.T) {
	n, _ := countSignalHandlers(t)
	dir := filepath.Join(t.TempDir(), ".backlog")
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(Extensions{}, append([]string{"--dir", dir, "--actor", "t"}, args...), &out, &errb); code != 0 {
			t.Fatalf("bl %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	run("init")
	if got := n.Load(); got != 1 {
		t.Fatalf("bl init (parsed by kong) installed %d signal handlers, want 1", got)
	}
	run("version")
	run("create", "--title", "two")
	run("claim", "--owner", "w", "--ttl", "1h")
	run("ready", "--limit", "10")
	run("list", "--json")
	run("show", strings.Fields(run("create", "--title", "three"))[1])
	if got := n.Load(); got != 1 {
		t.Errorf("the agents' commands installed %d signal handlers, want none", got-1)
	}
	run("stats")
	if got := n.Load(); got != 2 {
		t.Errorf("bl stats installed %d signal handlers, want 1", got-1)
	}
}

// TestWaitingHotCommandStopsOnSignal: a hand-parsed command that waits
// (claim --wait on a backlog with nothing to claim) catches SIGINT from
// the moment it waits, and ends as its wait would, not killed.
func TestWaitingHotCommandStopsOnSignal(t *testing.T) {
	_, armed := countSignalHandlers(t)
	dir := filepath.Join(t.TempDir(), ".backlog")
	var out, errb bytes.Buffer
	if code := Main(Extensions{}, []string{"--dir", dir, "init"}, &out, &errb); code != 0 {
		t.Fatalf("bl init: exit %d: %s", code, errb.String())
	}
	<-armed // init's own
	go func() {
		<-armed // the claim's wait installed its handler
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	errb.Reset()
	code := Main(Extensions{}, []string{"--dir", dir, "--actor", "t", "claim", "--owner", "w", "--wait", "10m"}, &out, &errb)
	// A wait a signal stopped ends as a wait that ran out (cmd_claim.go);
	// a signal nothing caught would have ended this test's process.
	if code != exitOK || !strings.Contains(out.String(), "nothing claimable") {
		t.Fatalf("claim --wait after SIGINT: exit %d, stdout %q, stderr %q; want the end of a wait", code, out.String(), errb.String())
	}
}

// TestLockWaitCatchesSignal: a hand-parsed write that finds the backlog
// locked installs the handler as it starts to wait, so SIGINT ends the
// wait (exit 1, "context canceled"), with nothing written.
func TestLockWaitCatchesSignal(t *testing.T) {
	_, armed := countSignalHandlers(t)
	dir := filepath.Join(t.TempDir(), ".backlog")
	var out, errb bytes.Buffer
	if code := Main(Extensions{}, []string{"--dir", dir, "init"}, &out, &errb); code != 0 {
		t.Fatalf("bl init: exit %d: %s", code, errb.String())
	}
	<-armed // init's own
	held := flock.New(filepath.Join(dir, "lock"))
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	go func() {
		<-armed // the create's lock wait installed its handler
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	errb.Reset()
	code := Main(Extensions{}, []string{"--dir", dir, "--actor", "t", "create", "--title", "t", "--lock-timeout", "10m"}, &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "canceled") {
		t.Fatalf("create waiting on the lock after SIGINT: exit %d, stderr %q; want %d, canceled", code, errb.String(), exitError)
	}
	if led, err := os.ReadFile(filepath.Join(dir, "ledger.jsonl")); err != nil || len(led) != 0 {
		t.Errorf("ledger after the interrupted create: %q, %v", led, err)
	}
}

// TestDiffCatchesSignalsOnlyWhenWaiting: bl diff reads only and never
// looks at its context while it compares, so a handler installed for the
// whole run would swallow the first Ctrl-C of a long diff. The line kong
// parses ("--" before the revisions) installs none up front, as the
// hand-parsed one does: the first signal ends either.
func TestDiffCatchesSignalsOnlyWhenWaiting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".backlog")
	var out, errb bytes.Buffer
	if code := Main(Extensions{}, []string{"--dir", dir, "init"}, &out, &errb); code != 0 {
		t.Fatalf("bl init: exit %d: %s", code, errb.String())
	}
	t.Setenv(handedOverEnv, "1") // no bl-git: the diff stops where it would hand over
	n, _ := countSignalHandlers(t)
	for _, args := range [][]string{{"diff", "A", "B"}, {"diff", "--", "A", "B"}, {"diff", "--", "A"}} {
		errb.Reset()
		code := Main(Extensions{}, append([]string{"--dir", dir}, args...), &out, &errb)
		t.Logf("bl %q: exit %d: %s", args, code, errb.String())
		if got := n.Load(); got != 0 {
			t.Errorf("bl %q installed %d signal handlers before it waited, want none", args, got)
		}
		n.Store(0)
	}
}
