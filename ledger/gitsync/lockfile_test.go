package gitsync

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWithLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refs", "heads", "main")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Fatalf("%s holds %q, want %q", path, got, want)
		}
		if _, err := os.Stat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the lock file is left behind: %v", err)
		}
	}

	// A failed write leaves the file as it was, and no lock file.
	boom := errors.New("boom")
	err := withLockFile(path, time.Second, func(f *os.File) error {
		f.WriteString("half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	check("old\n")

	// A written lock file replaces the file.
	if err := withLockFile(path, time.Second, func(f *os.File) error {
		_, err := f.WriteString("new\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check("new\n")

	// A lock file someone else holds is waited for, then reported.
	if err := os.WriteFile(path+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = withLockFile(path, 10*time.Millisecond, func(*os.File) error { return nil })
	if !errors.Is(err, ErrGitLocked) {
		t.Fatalf("held lock: %v, want ErrGitLocked", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Fatalf("a held lock changed the file: %q", got)
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("someone else's lock file was removed: %v", err)
	}
}
