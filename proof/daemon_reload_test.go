package proof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestDaemonReloadsConfig: a running bl daemon runs each relayed call with
// config.json as it stands when the call comes: review.required pulled in
// (a new file renamed over the old, as git pull writes it) sends the next
// complete to review; a file that does not read keeps the gate.
func TestDaemonReloadsConfig(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	for _, id := range []string{"R1", "R2", "R3"} {
		if c := r.run("seed", runOpts{}, "create", "--id", id, "--title", "relayed"); c.Exit != 0 {
			t.Fatalf("create: %s", c.Stderr)
		}
	}
	startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL(), "BL_GIT=/nonexistent/bl-git"}}
	// finish claims and completes id through the daemon and returns the
	// status complete printed.
	finish := func(id string) string {
		t.Helper()
		var out []byte
		for _, args := range [][]string{
			{"claim", "--owner", "w", "--id", id, "--json"},
			{"complete", id, "--owner", "w", "--epoch", "1", "--json"},
		} {
			c := r.run("w", env, args...)
			if c.Exit != 0 {
				t.Fatalf("%s through the daemon: exit %d: %s", args[0], c.Exit, c.Stderr)
			}
			out = c.Stdout
		}
		for _, s := range []string{"done", "review"} {
			if strings.Contains(string(out), `"status": "`+s+`"`) {
				return s
			}
		}
		t.Fatalf("%s: %s", id, out)
		return ""
	}
	if got := finish("R1"); got != "done" {
		t.Fatalf("R1: %s", got)
	}
	config := filepath.Join(r.dir, "config.json")
	tmp := config + ".new"
	os.WriteFile(tmp, []byte(`{"version": 1, "review": {"required": true}}`), 0o644)
	if err := os.Rename(tmp, config); err != nil {
		t.Fatal(err)
	}
	if got := finish("R2"); got != "review" {
		t.Fatalf("R2 after review.required was pulled in: %s", got)
	}
	os.WriteFile(config, []byte(`{"version": 1, "review": `), 0o644)
	if got := finish("R3"); got != "review" {
		t.Fatalf("R3 with a config.json that does not read: %s, want the last good settings", got)
	}
}
