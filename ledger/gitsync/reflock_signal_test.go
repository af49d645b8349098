//go:build linux

package gitsync

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/go-git/go-git/v5/plumbing"
)

// A signal that comes while updateRef holds git's lock file for a ref
// must not end the process there: os.Exit runs no deferred cleanup, and
// the <ref>.lock left behind refuses every later git and bl write of the
// ref ("another git process is running"). The read under the lock is
// made to block (packed-refs swapped for a FIFO after the open, the ref
// not loose) so the signal comes inside it; the handler is bl's rule
// (internal/cli/signals.go): the first signal ends the process when
// gitdir.Interrupt says a MayBlock call is in progress.
func TestSignalUnderRefLockLeavesNoLock(t *testing.T) {
	if dir := os.Getenv("BL_TEST_REFLOCK_DIR"); dir != "" {
		refLockHelper(t, dir)
		return
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang bound, not a speed assertion
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSignalUnderRefLockLeavesNoLock$")
	cmd.Env = append(os.Environ(), "BL_TEST_REFLOCK_DIR="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "opened\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	fifo := filepath.Join(dir, ".git", "packed-refs")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("go\n"))
	lock := filepath.Join(dir, ".git", "refs", "remotes", "origin", "main.lock")
	// Blocked opening the FIFO (the kernel's wait for a writer), the
	// lock taken.
	for !blockedOnFIFO(cmd.Process.Pid) {
		if ctx.Err() != nil {
			t.Fatal("the helper never blocked on the FIFO")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("blocked without the lock: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The helper exits on the signal, or says it took it and goes on:
	// then a writer lets its read go on (the FIFO reads empty).
	seen := make(chan struct{})
	go func() {
		if line, _ := r.ReadString('\n'); line == "signal\n" {
			close(seen)
		}
	}()
	var err error
	select {
	case err = <-done:
	case <-seen:
		f, ferr := os.OpenFile(fifo, os.O_WRONLY, 0)
		if ferr != nil {
			t.Fatal(ferr)
		}
		f.Close()
		err = <-done
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		t.Fatal("the helper hung")
	}
	if _, serr := os.Stat(lock); serr == nil {
		t.Fatalf("the signal ended the process holding %s (exit: %v): it is left behind", lock, err)
	}
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
}

// refLockHelper opens the repository in dir, waits for the FIFO, and
// points refs/remotes/origin/main at HEAD's commit under bl's signal rule.
func refLockHelper(t *testing.T, dir string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		if gitdir.Interrupt() {
			os.Stderr.WriteString("bl: interrupted\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("signal\n")
	}()
	g, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("opened\n")
	if line, _ := bufio.NewReader(os.Stdin).ReadString('\n'); strings.TrimSpace(line) != "go" {
		t.Fatal("no go")
	}
	err = g.updateRef(plumbing.NewRemoteReferenceName("origin", "main"), plumbing.ZeroHash, head.Hash())
	if err != nil && !errors.Is(err, errRefMoved) {
		t.Fatal(err)
	}
}

// blockedOnFIFO reports whether a thread of process pid waits in the
// kernel for the other end of a FIFO it opens.
func blockedOnFIFO(pid int) bool {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "wchan"))
	for _, w := range tasks {
		if b, err := os.ReadFile(w); err == nil && strings.Contains(string(b), "wait_for_partner") {
			return true
		}
	}
	return false
}
