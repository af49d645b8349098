package gitdir

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTrackedInHookEnv: Tracked answers in a git hook's environment as it
// does from a shell. git sets GIT_DIR and GIT_INDEX_FILE for the
// pre-commit hook of a linked worktree; a git run with them from the
// backlog's directory would take that directory for the work tree and
// answer "not tracked".
func TestTrackedInHookEnv(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	dir := filepath.Join(repo, ".backlog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run("init", "-q", ".")
	run("add", ".backlog/lock")
	ctx := context.Background()
	if is, err := Tracked(ctx, dir, "lock"); err != nil || !is {
		t.Fatalf("from a shell: tracked %v, %v; want true", is, err)
	}
	t.Setenv("GIT_DIR", filepath.Join(repo, ".git"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(repo, ".git", "index"))
	if is, err := Tracked(ctx, dir, "lock"); err != nil || !is {
		t.Fatalf("in a hook's environment: tracked %v, %v; want true, as from a shell", is, err)
	}
}
