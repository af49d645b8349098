package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandTable: every command file has its row in commands.go, and
// every row names a distinct command whose struct says what it is (Help).
// A command file without a row would compile and never run.
func TestCommandTable(t *testing.T) {
	rows := map[string]bool{}
	for _, c := range commands {
		if rows[c.name] {
			t.Errorf("command %s has two rows", c.name)
		}
		rows[c.name] = true
		if _, ok := c.new().(interface{ Help() string }); !ok && !c.hidden {
			t.Errorf("command %s: its struct has no Help method", c.name)
		}
	}
	files, err := filepath.Glob("cmd_*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no command files: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		name := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(f, "cmd_"), ".go"), "_", "-")
		if !rows[name] {
			t.Errorf("%s has no row in commands.go", f)
		}
	}
}

// TestNoInit: nothing on the command line's side runs at start-up:
// commands are the table in commands.go, and what a binary adds beyond
// the lean bl is the Extensions it passes to Main.
func TestNoInit(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "gitcli", "../../hooks", "../../hooks/webhook", "../../cmd/bl", "../../cmd/bl-git"} {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		files = append(files, fs...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nfunc init() {") {
			t.Errorf("%s has an init function", f)
		}
	}
}
