//go:build unix

package gitdir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFIFOFilesNeverOpened: each file gitdir reads, and each CheckFiles
// refuses, as a FIFO: nothing blocks (a FIFO nobody writes would block an
// ordinary open forever), and CheckFiles names it.
func TestFIFOFilesNeverOpened(t *testing.T) {
	for _, file := range []string{".git", ".git/commondir", ".git/config", ".git/config.worktree", ".git/HEAD",
		".git/refs/heads/main", ".git/index", ".git/packed-refs"} {
		t.Run(file, func(t *testing.T) {
			root := t.TempDir()
			write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
			write(t, filepath.Join(root, ".git", "refs", "heads", "main"), "0123456789012345678901234567890123456789\n")
			write(t, filepath.Join(root, ".git", "config"), "[core]\n")
			path := filepath.Join(root, filepath.FromSlash(file))
			if file == ".git" {
				if err := os.RemoveAll(path); err != nil {
					t.Fatal(err)
				}
			}
			_ = os.Remove(path)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
			var nr *NotRegularError
			if err := CheckFiles(root); !errors.As(err, &nr) || nr.Path != path || nr.Kind != "FIFO" {
				t.Errorf("CheckFiles = %v, want the FIFO %s", err, path)
			}
			// The readers: each returns, whatever it makes of it.
			_, _, _ = Dirs(root)
			_ = Head(root)
			_ = sha256Repo(filepath.Join(root, ".git"))
			if _, err := Run(t.Context(), root, "status"); !errors.As(err, &nr) && !errors.Is(err, ErrNoGit) {
				t.Errorf("Run = %v, want the FIFO refused before git runs", err)
			}
		})
	}
}
