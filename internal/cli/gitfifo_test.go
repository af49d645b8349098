//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/internal/testbin"
)

// hangBound is how long the harness lets one bl run before it calls it
// hung and kills it: a bound on the test, never a measure of speed.
const hangBound = 2 * time.Minute

// runBounded runs name with args in dir under env and returns its exit
// code and standard error; a run past hangBound fails the test as hung.
func runBounded(t *testing.T, dir string, env []string, name string, args ...string) (code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v in %s hung (killed after %v)", filepath.Base(name), args, dir, hangBound)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), errb.String()
	} else if err != nil {
		t.Fatalf("%s %v: %v", filepath.Base(name), args, err)
	}
	return 0, errb.String()
}

// TestGitFIFOFilesRefused: a FIFO where git keeps .git/config, HEAD, the
// branch's ref or the index made git, go-git and bl block forever in an
// open no SIGTERM ends. bl sync and bl diff (the real binaries, with the
// system git) now exit 1 naming the file, and change nothing.
func TestGitFIFOFilesRefused(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	bin, err := testbin.Dir(testbin.Config{Race: testbin.Race}, "bl", "bl-git")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1", "BL_ACTOR=tester", "GORACE=atexit_sleep_ms=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	run := func(dir string, args ...string) (code int, stderr string) {
		t.Helper()
		name := args[0]
		if name == "bl" {
			name = filepath.Join(bin, "bl")
		}
		return runBounded(t, dir, env, name, args[1:]...)
	}
	repo := filepath.Join(t.TempDir(), "r")
	for _, args := range [][]string{{"git", "init", "-q", "-b", "main", repo}} {
		if code, errs := run(t.TempDir(), args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	for _, args := range [][]string{{"bl", "init"}, {"bl", "create", "--id", "A1", "--title", "one"},
		{"git", "add", "-A"}, {"git", "commit", "-qm", "one"}, {"bl", "create", "--id", "A2", "--title", "two"}} {
		if code, errs := run(repo, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	for _, file := range []string{"config", "HEAD", "refs/heads/main", "index"} {
		dir := filepath.Join(t.TempDir(), "r")
		if code, errs := run(repo, "cp", "-a", repo, dir); code != 0 {
			t.Fatal(errs)
		}
		fifo := filepath.Join(dir, ".git", filepath.FromSlash(file))
		if err := os.Remove(fifo); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		ledger := filepath.Join(dir, ".backlog", "ledger.jsonl")
		before, err := os.ReadFile(ledger)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"bl", "sync"}, {"bl", "diff", "HEAD"}} {
			code, errs := run(dir, args...)
			if code != exitError || !strings.Contains(errs, fifo+" is a FIFO, not a regular file") {
				t.Errorf("FIFO at .git/%s: %v: exit %d, want %d naming the FIFO; stderr: %s", file, args, code, exitError, errs)
			}
		}
		if after, _ := os.ReadFile(ledger); !bytes.Equal(after, before) {
			t.Errorf("FIFO at .git/%s: the ledger changed", file)
		}
	}

	// A remote-tracking ref go-git reads during bl sync --push (the
	// value git packed stays readable): the sync ends, with no hang.
	remote := filepath.Join(t.TempDir(), "remote.git")
	for _, args := range [][]string{{"git", "init", "-q", "--bare", "-b", "main", remote}, {"git", "remote", "add", "origin", remote},
		{"bl", "sync", "--push"}, {"git", "pack-refs", "--all"}} {
		if code, errs := run(repo, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	tracking := filepath.Join(repo, ".git", "refs", "remotes", "origin", "main")
	if err := os.MkdirAll(filepath.Dir(tracking), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(tracking)
	if err := syscall.Mkfifo(tracking, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, errs := run(repo, "bl", "sync", "--push"); code != 0 && code != exitError {
		t.Errorf("FIFO at the tracking ref: bl sync --push: exit %d: %s", code, errs)
	}
}

// TestSignalEndsBlockedOpen: a command blocked in an open that may never
// return (gitdir.MayBlock: go-git opening a FIFO swapped in after the
// check) cannot look at its context; the first SIGTERM ends the process
// (exit 1, "interrupted") instead of being caught and ignored. A real
// process: this test binary, run as the helper below.
func TestSignalEndsBlockedOpen(t *testing.T) {
	if fifo := os.Getenv("BL_TEST_BLOCKED_OPEN"); fifo != "" {
		ctx, stop := catchSignals(context.Background())
		defer stop()
		_ = gitdir.MayBlock(func() error {
			os.Stdout.WriteString("blocked\n")
			f, err := os.Open(fifo) // blocks: nobody opens it for writing
			if err == nil {
				f.Close()
			}
			return err
		})
		<-ctx.Done()
		os.Exit(0) // the signal was caught and the open returned: not what a blocked open does
	}
	fifo := filepath.Join(t.TempDir(), "config")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSignalEndsBlockedOpen$")
	cmd.Env = append(os.Environ(), "BL_TEST_BLOCKED_OPEN="+fifo)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf), "blocked") {
		t.Fatalf("helper did not start: %q %v", buf, err)
	}
	// It printed before the open: the signal may come just before the
	// open blocks, which ends the process the same way.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the blocked helper ignored SIGTERM (killed after %v)", hangBound)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError || !strings.Contains(errb.String(), "bl: interrupted") {
		t.Fatalf("helper: %v, stderr %q; want exit %d and bl: interrupted", err, errb.String(), exitError)
	}
}
