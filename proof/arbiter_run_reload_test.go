package proof

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestArbiterRunReloadsEpics: bl run --loop through a claim arbiter picks
// its next card with config.json as it stands then, as without one: an
// epics.wait_for_children: false pulled in while the first card runs makes
// the epic, held back by a blocked child, the next card.
func TestArbiterRunReloadsEpics(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	for _, args := range [][]string{
		{"create", "--id", "A1", "--title", "first", "--priority", "1"},
		{"create", "--id", "E1", "--title", "epic"},
		{"create", "--id", "K1", "--title", "child", "--parent", "E1"},
		{"block", "K1", "--reason", "waits on a person"},
	} {
		if c := r.run("seed", runOpts{}, args...); c.Exit != 0 {
			t.Fatalf("%v: %s", args, c.Stderr)
		}
	}
	// The first card's command pulls the setting in, as git pull writes
	// a file: a new one renamed over the old.
	config := filepath.Join(r.dir, "config.json")
	script := `[ "$1" = A1 ] && printf '{"version":1,"epics":{"wait_for_children":false}}' > "$2.new" && mv "$2.new" "$2"; exit 0`
	cmd := exec.Command(bl, "run", "--dir", r.dir, "--owner", "agent-1", "--loop", "--", "sh", "-c", script, "sh", "{id}", config)
	cmd.Env = blEnv("BL_ARBITER=" + srv.URL())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bl run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "config.json changed") {
		t.Errorf("bl run did not say config.json changed:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "E1") {
		t.Fatalf("the epic was not the next card after epics.wait_for_children: false came in:\n%s\n%s", stdout.String(), stderr.String())
	}
}
