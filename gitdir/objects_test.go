package gitdir

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjects reads a commit, its tree and a blob through one git
// cat-file, and answers a name git does not know, or one that would be
// an option or a second input line, with ErrMissing, the process still
// usable after.
func TestObjects(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	if err := os.MkdirAll(filepath.Join(repo, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "d", "f.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "-q", "-m", "one")

	o, err := OpenObjects(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, name := range []string{"nope", "--batch-all-objects", "HEAD\nHEAD", "HEAD;touch x", "a b c", "", "HEAD:d^{commit}"} {
		if _, _, _, err := o.Get(name); !errors.Is(err, ErrMissing) {
			t.Errorf("Get(%q) = %v, want ErrMissing", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "x")); err == nil {
		t.Error("a name ran a command")
	}
	id, typ, data, err := o.Get("HEAD^{commit}")
	if err != nil || typ != "commit" || len(id) != 40 {
		t.Fatalf("Get(HEAD^{commit}) = %s %s, %v", id, typ, err)
	}
	tree, _, _ := strings.Cut(strings.TrimPrefix(string(data), "tree "), "\n")
	_, typ, data, err = o.Get(tree)
	if err != nil || typ != "tree" {
		t.Fatalf("Get(tree) = %s, %v", typ, err)
	}
	entries, err := ParseTree(data, 20)
	if err != nil || len(entries) != 1 || entries[0].Name != "d" || entries[0].Mode != ModeDir {
		t.Fatalf("root tree = %+v, %v", entries, err)
	}
	_, _, data, err = o.Get("HEAD:d/f.txt")
	if err != nil || string(data) != "hello\n" {
		t.Fatalf("Get(HEAD:d/f.txt) = %q, %v", data, err)
	}
	if _, typ, size, err := o.Info("HEAD:d/f.txt"); err != nil || typ != "blob" || size != 6 {
		t.Fatalf("Info(HEAD:d/f.txt) = %s %d, %v", typ, size, err)
	}
	if _, _, _, err := o.Info("nope"); !errors.Is(err, ErrMissing) {
		t.Errorf("Info(nope) = %v, want ErrMissing", err)
	}
	for _, bad := range []string{"100644 f", "x f\x00" + strings.Repeat("a", 20), "100644 f\x00short"} {
		if _, err := ParseTree([]byte(bad), 20); err == nil {
			t.Errorf("ParseTree(%q) took a damaged tree", bad)
		}
	}
}

// TestObjectsOlderGit: a git without cat-file --batch-command (before
// 2.36) still serves Get, through --batch; Info says ErrNoInfo.
func TestObjectsOlderGit(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	bin, repo := t.TempDir(), t.TempDir()
	script := "#!/bin/sh\nfor a; do [ \"$a\" = --batch-command ] && { echo \"usage: unknown option\" >&2; exit 129; }; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	o, err := OpenObjects(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, _, _, err := o.Info("HEAD"); !errors.Is(err, ErrNoInfo) {
		t.Errorf("Info first = %v, want ErrNoInfo", err)
	}
	id, typ, data, err := o.Get("HEAD:")
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("Get(HEAD:) in an empty repository = %s %s %q, %v", id, typ, data, err)
	}
	empty := "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	if _, typ, data, err := o.Get(empty); err != nil || typ != "tree" || len(data) != 0 {
		t.Fatalf("Get(empty tree) = %s %q, %v", typ, data, err)
	}
	if _, _, _, err := o.Info(empty); !errors.Is(err, ErrNoInfo) {
		t.Errorf("Info = %v, want ErrNoInfo", err)
	}
}
