package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplaceFileKeepsModeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	mid := false
	if err := ReplaceFile(path, []byte("new bytes"), func() { mid = true }); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new bytes" || !mid {
		t.Fatalf("content %q, err %v, mid called %v", got, err, mid)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want the replaced file's 0600", st.Mode().Perm())
	}
	if err := ReplaceFile(filepath.Join(dir, "new"), []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "new")); st.Mode().Perm() != 0o644 {
		t.Fatalf("a new file is %v, want 0644", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("directory holds %d entries, want 2 (no temp file left)", len(entries))
	}
}

func TestReplaceFileFailsWithoutADirectory(t *testing.T) {
	if err := ReplaceFile(filepath.Join(t.TempDir(), "missing", "f"), []byte("x"), nil); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}

func TestAppendSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	for _, s := range []string{"a\n", "b\n"} {
		if err := AppendSync(path, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != "a\nb\n" {
		t.Fatalf("got %q", got)
	}
}
