//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bl-backlog/bl/internal/testbin"
)

// TestSetupRecordConcurrent: bl setup run at once in several repositories
// (the real binary, one configuration directory) keeps every file of
// every run in the record: each run reads, adds to and replaces the one
// record file, and a run that read it before another replaced it would
// write the other's entries away (--remove would then delete a file that
// held {} before setup).
func TestSetupRecordConcurrent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	bin, err := testbin.Dir(testbin.Config{Race: testbin.Race}, "bl", "bl-git")
	if err != nil {
		t.Fatal(err)
	}
	home, config := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "HOME="+home,
		"XDG_CONFIG_HOME="+config, "GIT_CONFIG_NOSYSTEM=1", "BL_ACTOR=tester", "GORACE=atexit_sleep_ms=0")
	const repos, rounds = 6, 3
	want := 0
	for round := range rounds {
		dirs := make([]string, repos)
		for i := range dirs {
			dirs[i] = t.TempDir()
			if code, errs := runBounded(t, dirs[i], env, "git", "init", "-q"); code != 0 {
				t.Fatalf("git init: %s", errs)
			}
		}
		var wg sync.WaitGroup
		codes := make([]int, repos)
		errs := make([]string, repos)
		for i, dir := range dirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], errs[i] = runBounded(t, dir, env, filepath.Join(bin, "bl"), "setup", "claude")
			}()
		}
		wg.Wait()
		for i := range dirs {
			if codes[i] != 0 {
				t.Fatalf("round %d: bl setup in %s: exit %d: %s", round, dirs[i], codes[i], errs[i])
			}
		}
		want += repos * 3 // .mcp.json, CLAUDE.md, .claude/settings.json
		data, err := os.ReadFile(filepath.Join(config, "bl", "setup.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rec struct{ Files map[string]json.RawMessage }
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatal(err)
		}
		if len(rec.Files) != want {
			t.Fatalf("round %d: the record holds %d files, want %d: runs at once wrote each other's entries away", round, len(rec.Files), want)
		}
	}
}
