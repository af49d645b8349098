package gitdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLayouts reads each way git lays out a worktree: a main worktree, a
// linked one, a submodule and a worktree of a bare repository.
func TestLayouts(t *testing.T) {
	top := t.TempDir()
	main := filepath.Join(top, "main")
	if err := os.MkdirAll(filepath.Join(main, ".git", "worktrees", "wt"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A linked worktree, with a relative commondir as git writes it.
	linked := filepath.Join(top, "wt")
	write(t, filepath.Join(linked, ".git"), "gitdir: "+filepath.Join(main, ".git", "worktrees", "wt")+"\n")
	write(t, filepath.Join(main, ".git", "worktrees", "wt", "commondir"), "../..\n")
	// A submodule: a relative gitdir and no commondir.
	sub := filepath.Join(main, "sub")
	write(t, filepath.Join(sub, ".git"), "gitdir: ../.git/modules/sub\n")
	if err := os.MkdirAll(filepath.Join(main, ".git", "modules", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A worktree of a bare repository: its common directory is not .git.
	bare := filepath.Join(top, "bare.git")
	bareWT := filepath.Join(top, "bwt")
	write(t, filepath.Join(bareWT, ".git"), "gitdir: "+filepath.Join(bare, "worktrees", "bwt")+"\n")
	write(t, filepath.Join(bare, "worktrees", "bwt", "commondir"), "../..\n")
	// Not a gitdir file.
	junk := filepath.Join(top, "junk")
	write(t, filepath.Join(junk, ".git"), "hello\n")

	for _, tc := range []struct {
		name            string
		root            string
		gitDir, common  string
		linkedMain      string // "" when not a linked worktree
		wantErrFromDirs bool
	}{
		{"main", main, filepath.Join(main, ".git"), filepath.Join(main, ".git"), "", false},
		{"linked", linked, filepath.Join(main, ".git", "worktrees", "wt"), filepath.Join(main, ".git"), main, false},
		{"submodule", sub, filepath.Join(main, ".git", "modules", "sub"), filepath.Join(main, ".git", "modules", "sub"), "", false},
		{"bare worktree", bareWT, filepath.Join(bare, "worktrees", "bwt"), bare, "", false},
		{"junk", junk, "", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, c, err := Dirs(tc.root)
			if tc.wantErrFromDirs {
				if err == nil {
					t.Fatalf("Dirs = %s, %s; want an error", g, c)
				}
			} else if err != nil || g != tc.gitDir || c != tc.common {
				t.Fatalf("Dirs = %s, %s, %v; want %s, %s", g, c, err, tc.gitDir, tc.common)
			}
			m, ok := LinkedMain(tc.root)
			if ok != (tc.linkedMain != "") || m != tc.linkedMain {
				t.Fatalf("LinkedMain = %q, %v; want %q", m, ok, tc.linkedMain)
			}
		})
	}
}

func TestRoot(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "repo", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(top, "repo", "a", "b") // need not exist
	if r, err := Root(deep); err != nil || r != filepath.Join(top, "repo") {
		t.Fatalf("Root(%s) = %s, %v", deep, r, err)
	}
	if r, err := Root(filepath.Join(top, "elsewhere")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Root outside a repository = %s, %v; want ErrNotFound", r, err)
	}
}
