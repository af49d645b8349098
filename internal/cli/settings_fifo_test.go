//go:build unix

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bl-backlog/bl/internal/testbin"
)

// TestSettingsFIFORefused: a FIFO at .backlog/config.json, hooks.json or
// arbiter.json (made on the machine: git cannot commit one) held every
// command in open(2), where no SIGTERM reaches it. The real bl now names
// the file and does not open it: a config.json or arbiter.json so is a
// setting error (exit 2, nothing written), a hooks.json so runs no hook
// (as any hooks.json that does not read), and bl doctor reports it.
func TestSettingsFIFORefused(t *testing.T) {
	bin, err := testbin.Dir(testbin.Config{Race: testbin.Race}, "bl", "bl-git")
	if err != nil {
		t.Fatal(err)
	}
	// BL_TRUST_HOOKS: outside git, hooks.json is read only when trusted.
	env := append(os.Environ(), "HOME="+t.TempDir(), "BL_ACTOR=tester", "GORACE=atexit_sleep_ms=0", "BL_ARBITER=", "BL_TRUST_HOOKS=1")
	run := func(dir string, args ...string) (int, string) {
		t.Helper()
		return runBounded(t, dir, env, filepath.Join(bin, "bl"), args...)
	}
	for _, c := range []struct {
		file string
		args []string
	}{
		{"config.json", []string{"ready"}},
		{"config.json", []string{"create", "--title", "x"}},
		{"config.json", []string{"doctor"}},
		{"hooks.json", []string{"create", "--title", "x"}},
		{"arbiter.json", []string{"claim", "--owner", "w"}},
	} {
		dir := t.TempDir()
		if code, errs := run(dir, "init"); code != 0 {
			t.Fatalf("bl init: %s", errs)
		}
		if code, errs := run(dir, "create", "--id", "A1", "--title", "one"); code != 0 {
			t.Fatalf("bl create: %s", errs)
		}
		ledgerPath := filepath.Join(dir, ".backlog", "ledger.jsonl")
		before, err := os.ReadFile(ledgerPath)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, ".backlog", c.file)
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		code, errs := run(dir, c.args...)
		if !strings.Contains(errs, c.file) || !strings.Contains(errs, "FIFO") {
			t.Errorf("%s a FIFO, bl %v: %q; want it named as a FIFO", c.file, c.args, errs)
		}
		if c.args[0] == "doctor" || c.file == "hooks.json" {
			continue // named; bl doctor goes on with its checks, a write without its hooks (a warning)
		}
		if code != exitUsage {
			t.Errorf("%s a FIFO, bl %v: exit %d, want %d", c.file, c.args, code, exitUsage)
		}
		if after, _ := os.ReadFile(ledgerPath); !bytes.Equal(after, before) {
			t.Errorf("%s a FIFO, bl %v changed the ledger", c.file, c.args)
		}
	}
}
