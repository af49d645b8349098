package proof

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestArbiterWatchTakesInWhatCameBefore: two clones of one backlog under
// one arbiter (real bl processes, no sync between them). Clone a learns
// that b claimed K9; b releases it. a's lists still show it claimed, but
// a bl watch started afterwards takes the release in at once (it prints
// it), and a's bl ready lists K9 again; a claim --wait after a second
// claim and release takes the card at once.
func TestArbiterWatchTakesInWhatCameBefore(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	a := newBacklog(t, bl)
	if c := a.run("seed", runOpts{}, "create", "--id", "K9", "--title", "k9"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	b := &runner{bin: bl, dir: filepath.Join(t.TempDir(), ".backlog")}
	if err := os.CopyFS(b.dir, os.DirFS(a.dir)); err != nil {
		t.Fatal(err)
	}
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL()}}
	must := func(r *runner, exit int, args ...string) Call {
		t.Helper()
		c := r.run("w", env, args...)
		if c.Exit != exit {
			t.Fatalf("bl %s: exit %d, want %d: %s", strings.Join(args, " "), c.Exit, exit, c.Stderr)
		}
		return c
	}
	must(b, 0, "claim", "--owner", "m2", "--id", "K9")
	must(a, 4, "claim", "--owner", "m1", "--id", "K9") // a takes in b's claim
	must(b, 0, "release", "--id", "K9", "--owner", "m2", "--epoch", "1")
	if c := must(a, 0, "ready", "--json"); strings.Contains(string(c.Stdout), "K9") {
		t.Fatalf("a's bl ready lists K9 before anything took the release in: %s", c.Stdout)
	}

	// The bound only keeps a broken build from hanging the run.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := exec.CommandContext(ctx, bl, "watch", "--count", "1", "--json", "--dir", a.dir)
	w.Env = blEnv(env.env...)
	out, err := w.Output()
	if err != nil || !strings.Contains(string(out), `"op":"release"`) {
		t.Fatalf("bl watch in a printed %q (%v): the release made before it started was not taken in", out, err)
	}
	if c := must(a, 0, "ready", "--json"); !strings.Contains(string(c.Stdout), `"K9"`) {
		t.Errorf("a's bl ready after the watch: %s", c.Stdout)
	}

	must(b, 0, "claim", "--owner", "m2", "--id", "K9")
	must(a, 4, "claim", "--owner", "m1", "--id", "K9")
	must(b, 0, "release", "--id", "K9", "--owner", "m2", "--epoch", "2")
	c := must(a, 0, "claim", "--owner", "m1", "--wait", "1h", "--json")
	if !strings.Contains(string(c.Stdout), `"claim_epoch": 3`) {
		t.Errorf("a's claim --wait: %s", c.Stdout)
	}
}
