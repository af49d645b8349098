//go:build unix

package gitdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCommitRefNotAFile: a ref (or HEAD, or packed-refs) that is a FIFO,
// a device or a huge file is not read: ErrUnsure, at once, with a
// bounded read.
func TestCommitRefNotAFile(t *testing.T) {
	repo, _ := smallRepo(t)
	gitDir := filepath.Join(repo, ".git")
	s, err := OpenStore(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fifo := filepath.Join(gitDir, "refs", "heads", "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(gitDir, "refs", "heads", "zero")); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(gitDir, "refs", "heads", "huge")
	if err := os.WriteFile(huge, []byte("ref: refs/heads/"+strings.Repeat("x", 1<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"fifo", "zero", "huge"} {
		if got, err := s.Commit(gitDir, gitDir, rev); !errors.Is(err, ErrUnsure) {
			t.Errorf("Commit(%q) = %s, %v; want ErrUnsure", rev, got, err)
		}
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(gitDir, "HEAD"), filepath.Join(gitDir, "HEAD.real")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(gitDir, "HEAD"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Commit(gitDir, gitDir, "HEAD"); !errors.Is(err, ErrUnsure) {
		t.Errorf("HEAD a FIFO: %s, %v; want ErrUnsure", got, err)
	}
	if err := syscall.Mkfifo(filepath.Join(gitDir, "packed-refs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Commit(gitDir, gitDir, "nosuch"); !errors.Is(err, ErrUnsure) {
		t.Errorf("packed-refs a FIFO: %s, %v; want ErrUnsure", got, err)
	}
}

// TestReadLooseFIFO: a loose object that is a FIFO is ErrUnsure, not a
// read that waits for a writer.
func TestReadLooseFIFO(t *testing.T) {
	repo, git := smallRepo(t)
	id := git("rev-parse", "HEAD:f.txt")
	p := filepath.Join(repo, ".git", "objects", id[:2], id[2:])
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	s, err := OpenStore(filepath.Join(repo, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Read(id); !errors.Is(err, ErrUnsure) {
		t.Errorf("Read of a FIFO: %v, want ErrUnsure", err)
	}
	if _, err := s.Size(id); !errors.Is(err, ErrUnsure) {
		t.Errorf("Size of a FIFO: %v, want ErrUnsure", err)
	}
}

// TestIndexBlobIDIndexFIFO: an index that is a FIFO is not read (ok
// false), rather than an open that waits for a writer.
func TestIndexBlobIDIndexFIFO(t *testing.T) {
	repo, _ := smallRepo(t)
	index := filepath.Join(repo, ".git", "index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(index, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if id, _, ok := IndexBlobID(repo, "f.txt"); ok {
		t.Errorf("an index that is a FIFO: %s", id)
	}
}

// TestStagedIndexFIFO: StagedFile and TrackedUnder do not wait on an
// index that is a FIFO (every bl command that opens the backlog asks).
func TestStagedIndexFIFO(t *testing.T) {
	repo, _ := smallRepo(t)
	index := filepath.Join(repo, ".git", "index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(index, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, ok := StagedFile(repo, "f.txt"); ok {
		t.Error("StagedFile read an index that is a FIFO")
	}
	if _, ok := TrackedUnder(repo, ""); ok {
		t.Error("TrackedUnder read an index that is a FIFO")
	}
}

// TestReadPackFIFO: a pack's .idx or .pack that is a FIFO is ErrUnsure,
// not an open that waits for a writer.
func TestReadPackFIFO(t *testing.T) {
	for _, ext := range []string{".idx", ".pack"} {
		repo, git := smallRepo(t)
		id := git("rev-parse", "HEAD:f.txt")
		git("gc", "-q")
		packs, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "pack-*"+ext))
		if len(packs) != 1 {
			t.Fatalf("packs: %v", packs)
		}
		if err := os.Remove(packs[0]); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(packs[0], 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		s, err := OpenStore(filepath.Join(repo, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Read(id); !errors.Is(err, ErrUnsure) {
			t.Errorf("%s a FIFO: %v, want ErrUnsure", ext, err)
		}
		s.Close()
	}
}
