package proof

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestDaemonRelaysOwnerCommands: with a bl daemon serving the clone, the
// lean bl's claims, heartbeats and completions through the arbiter are
// answered by it (BL_GIT names no program here: a hand-over would fail).
// A socket directory others may enter is not used, nor one that is gone.
func TestDaemonRelaysOwnerCommands(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	for _, id := range []string{"D1", "D2", "D3", "D4"} {
		if c := r.run("seed", runOpts{}, "create", "--id", id, "--title", "relayed"); c.Exit != 0 {
			t.Fatalf("create: %s", c.Stderr)
		}
	}
	d := startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL(), "BL_GIT=/nonexistent/bl-git"}}
	c := r.run("w", env, "claim", "--owner", "w", "--id", "D1", "--json")
	if c.Exit != 0 {
		t.Fatalf("claim through the daemon: exit %d: %s", c.Exit, c.Stderr)
	}
	for _, args := range [][]string{
		{"heartbeat", "D1", "--owner", "w", "--epoch", "1", "--json"},
		{"complete", "D1", "--owner", "w", "--epoch", "1", "--json"},
	} {
		if c := r.run("w", env, args...); c.Exit != 0 {
			t.Fatalf("%s through the daemon: exit %d: %s", args[0], c.Exit, c.Stderr)
		}
	}
	show := r.run("check", runOpts{}, "show", "D1", "--json")
	if !strings.Contains(string(show.Stdout), `"status": "done"`) {
		t.Fatalf("D1 after complete: %s", show.Stdout)
	}

	// A stopped daemon does not take a call: bl-git does (missing here).
	// A daemon that dies under a call: TestDaemonStoppedMidCall.
	_ = d.Process.Signal(syscall.SIGSTOP)
	for !processStopped(d.Process.Pid) {
		time.Sleep(10 * time.Millisecond)
	}
	c = r.run("w", env, "claim", "--owner", "w", "--id", "D2", "--json", "--request-id", "k1")
	if c.Exit == 0 || !strings.Contains(string(c.Stderr), "bl-git") {
		t.Errorf("a call with the daemon stopped: exit %d %s", c.Exit, c.Stderr)
	}
	_ = d.Process.Kill()
	_ = d.Wait()
	d = startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	if c := r.run("w", env, "claim", "--owner", "w", "--id", "D2", "--json", "--request-id", "k1"); c.Exit != 0 {
		t.Errorf("the retry with the same request id: exit %d %s", c.Exit, c.Stderr)
	}

	sockDir := filepath.Join(r.dir, "cache", "daemon")
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	c = r.run("w", env, "claim", "--owner", "w", "--id", "D3", "--json")
	if c.Exit == 0 || !strings.Contains(string(c.Stderr), "bl-git") {
		t.Errorf("a socket directory others may enter was used: exit %d %s", c.Exit, c.Stderr)
	}
	if err := os.Chmod(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = d.Process.Signal(syscall.SIGTERM)
	_ = d.Wait()
	if _, err := os.Lstat(filepath.Join(sockDir, "sock")); err == nil {
		t.Errorf("bl daemon left its socket behind")
	}
	c = r.run("w", env, "claim", "--owner", "w", "--id", "D4", "--json")
	if c.Exit == 0 || !strings.Contains(string(c.Stderr), "bl-git") {
		t.Errorf("with no daemon the claim did not go to bl-git: exit %d %s", c.Exit, c.Stderr)
	}

	// A link in the socket directory's place is refused, and what it
	// points at is left as it was.
	elsewhere := t.TempDir()
	if err := os.Chmod(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(sockDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, sockDir); err != nil {
		t.Fatal(err)
	}
	if c := r.run("w", runOpts{env: []string{"BL_ARBITER=" + srv.URL()}}, "daemon"); c.Exit != 2 {
		t.Errorf("bl daemon with a link for its directory: exit %d %s", c.Exit, c.Stderr)
	}
	if fi, err := os.Stat(elsewhere); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the link's target was changed: %v %v", fi.Mode(), err)
	}
}
