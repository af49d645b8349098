package proof

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestArbiterRunStopsBeforeLeaseEnds: bl run through the arbiter renews
// its lease there; once the server is gone, the heartbeats fail, and the
// supervisor stops its command before the lease it last renewed runs out
// (another machine may take the card then), records nothing and exits 4.
func TestArbiterRunStopsBeforeLeaseEnds(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "R1", "--title", "supervised"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	work := t.TempDir()
	// The command notes its pid, and when SIGTERM reached it (the file's
	// time: a shell builtin writes it, no process to start).
	script := `trap ': > died; exit 143' TERM; echo $$ > pid; while :; do sleep 0.05; done`
	cmd := exec.Command(bl, "run", "--dir", r.dir, "--owner", "agent-1", "--id", "R1", "--ttl", "8s", "--grace", "500ms", "--", "sh", "-c", script)
	cmd.Dir = work
	cmd.Env = blEnv("BL_ARBITER=" + srv.URL())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFor(t, filepath.Join(work, "pid"), exited, &stderr)
	// A heartbeat through the arbiter (every ttl/3), then the server goes.
	time.Sleep(4500 * time.Millisecond)
	srv.Shutdown()
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("bl run did not end after the arbiter went away:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 4 {
		t.Errorf("bl run exit %d, want 4 (lease lost):\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "could not renew the lease on R1") {
		t.Errorf("bl run did not say the lease could not be renewed:\n%s", stderr.String())
	}
	fi, err := os.Stat(filepath.Join(work, "died"))
	if err != nil {
		t.Fatalf("the command was not stopped (SIGTERM): %v\n%s", err, stderr.String())
	}
	died := fi.ModTime()
	// The lease as this clone last renewed it through the arbiter.
	show := r.run("check", runOpts{}, "show", "R1", "--json")
	var card struct {
		Status         string     `json:"status"`
		LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	}
	if err := json.Unmarshal(show.Stdout, &card); err != nil || card.LeaseExpiresAt == nil {
		t.Fatalf("show R1: %v %s", err, show.Stdout)
	}
	if card.Status != "claimed" {
		t.Errorf("R1 is %s: a run that lost its lease records nothing", card.Status)
	}
	if !died.Before(*card.LeaseExpiresAt) {
		t.Errorf("the command got SIGTERM at %s, after its lease ran out at %s", died.Format(time.RFC3339Nano), card.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	pidRaw, _ := os.ReadFile(filepath.Join(work, "pid"))
	if pid, err := strconv.Atoi(strings.TrimSpace(string(pidRaw))); err == nil && syscall.Kill(pid, 0) == nil {
		t.Errorf("the command (pid %d) still runs", pid)
	}
}

// waitFor waits until path exists, failing if the process ends first.
func waitFor(t *testing.T, path string, exited <-chan error, stderr *bytes.Buffer) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("bl run ended before its command started (%v):\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestArbiterRunRecordsOutcomeAfterOutage: the arbiter is down when the
// command exits 0: bl run tries the completion again, under its request
// id, while the lease lasts, and records it once the server is back.
func TestArbiterRunRecordsOutcomeAfterOutage(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "R2", "--title", "supervised"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	work := t.TempDir()
	script := `echo $$ > pid; while [ ! -e go ]; do sleep 0.05; done`
	cmd := exec.Command(bl, "run", "--dir", r.dir, "--owner", "agent-1", "--id", "R2", "--ttl", "30s", "--", "sh", "-c", script)
	cmd.Dir = work
	cmd.Env = blEnv("BL_ARBITER=" + srv.URL())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFor(t, filepath.Join(work, "pid"), exited, &stderr)
	opts := *srv.Opts
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	srv.Shutdown()
	srv.WaitForShutdown()
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the first attempts fail
	natstest.StartWith(t, &opts)        // the same port and store
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("bl run did not end:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("bl run exit %d, want 0:\n%s", code, stderr.String())
	}
	show := r.run("check", runOpts{}, "show", "R2", "--json")
	if !strings.Contains(string(show.Stdout), `"status": "done"`) {
		t.Errorf("R2 after the run: %s\n%s", show.Stdout, stderr.String())
	}
}
