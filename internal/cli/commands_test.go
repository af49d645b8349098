package cli

import (
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
