package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRefusesLinksOut: the library itself refuses a backlog whose
// ledger or lock is a symbolic link out of its directory.
func TestOpenRefusesLinksOut(t *testing.T) {
	for _, name := range []string{LedgerFile, LockFile, SnapshotFile} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".backlog")
			if _, err := Init(dir); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(out, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, name))
			if err := os.Symlink(out, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir, Options{})
			var le *LinkError
			if !errors.As(err, &le) || !errors.Is(err, ErrCorrupt) || le.Path != filepath.Join(dir, name) {
				t.Fatalf("Open = %v, want a *LinkError for %s", err, name)
			}
		})
	}
}

// TestInitRefusesForeignDirectory: Init writes nothing into a directory
// that holds other files and no backlog.
func TestInitRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte("root"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(dir); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Init = %v, want ErrInvalid", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("Init left %d entries", len(entries))
	}
}
