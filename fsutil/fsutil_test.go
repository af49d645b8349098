package fsutil

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// TestReadRegularAllocatesTheFileOnce: a tracked backlog file (an archive
// segment of 170 MB at 100k cards) is read into one buffer of its size,
// not grown by doubling and copied on the way.
func TestReadRegularAllocatesTheFileOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "segment.jsonl")
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := ReadRegular(p)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadRegular: %d bytes, %v; want the file's %d", len(got), err, len(want))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(want))*5/4 {
		t.Errorf("ReadRegular of a %d-byte file allocated %d bytes; want about the file's size", len(want), n)
	}
}

// TestReadRegularMax: a file up to the bound is read whole, one byte more
// is a *TooLargeError naming it, without reading it.
func TestReadRegularMax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadRegularMax(path, 100); err != nil || len(data) != 100 {
		t.Fatalf("at the bound: %d bytes, %v", len(data), err)
	}
	_, err := ReadRegularMax(path, 99)
	var large *TooLargeError
	if !errors.As(err, &large) || !strings.Contains(err.Error(), path) {
		t.Fatalf("over the bound: %v", err)
	}
}
