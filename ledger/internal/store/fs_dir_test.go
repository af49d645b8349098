//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadDirTypesMatchesReadDir: the archive lister reads what
// os.ReadDir reads, links told apart, over more entries than one
// getdents(2) buffer holds; a missing directory is ErrNotExist.
func TestReadDirTypesMatchesReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 300 {
		name := filepath.Join(dir, fmt.Sprintf("%s-%04d.jsonl", strings.Repeat("s", 40), 299-i))
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "out.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "in")); err != nil {
		t.Fatal(err)
	}
	got, err := readDirTypes(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, e := range want {
		if got[i].name != e.Name() || got[i].link != (e.Type()&os.ModeSymlink != 0) {
			t.Errorf("entry %d: %+v, want %s (link %v)", i, got[i], e.Name(), e.Type()&os.ModeSymlink != 0)
		}
	}
	if _, err := readDirTypes(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
}
