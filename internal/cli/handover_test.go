package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeExe(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLookupBLGit(t *testing.T) {
	root := t.TempDir()
	exeDir := filepath.Join(root, "exe")
	argDir := filepath.Join(root, "arg")
	pathDir := filepath.Join(root, "path")
	onPath := writeExe(t, filepath.Join(pathDir, blGitName()), 0o755)
	lookPath := func(name string) (string, error) {
		if p := filepath.Join(pathDir, name); isExecutable(p) {
			return p, nil
		}
		return "", errors.New("not found")
	}
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	exe := filepath.Join(exeDir, "bl")
	arg0 := filepath.Join(argDir, "bl")

	check := func(name, env, exe, arg0 string, lp func(string) (string, error), want, wantErr string) {
		t.Helper()
		got, err := lookupBLGit(env, exe, arg0, lp)
		switch {
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("%s: got %q, %v; want an error with %q", name, got, err, wantErr)
		case wantErr == "" && (err != nil || got != want):
			t.Errorf("%s: got %q, %v; want %q", name, got, err, want)
		}
	}

	// Nothing next to bl: PATH.
	check("path", "", exe, arg0, lookPath, onPath, "")
	// Nowhere: the error says where bl looked.
	check("none", "", exe, arg0, noPath, "", "not found in "+exeDir+" or "+argDir+" or on PATH")
	// Each directory is named once.
	check("same dir", "", exe, exe, noPath, "", "not found in "+exeDir+" or on PATH")
	// argv[0] without a slash was found on PATH: not a directory to look in.
	check("bare arg0", "", exe, "bl", noPath, "", "not found in "+exeDir+" or on PATH")

	// Next to argv[0] beats PATH; next to the executable beats both.
	nextToArg := writeExe(t, filepath.Join(argDir, blGitName()), 0o755)
	check("arg0 dir", "", exe, arg0, lookPath, nextToArg, "")
	nextToExe := writeExe(t, filepath.Join(exeDir, blGitName()), 0o755)
	check("exe dir", "", exe, arg0, lookPath, nextToExe, "")

	// A bl-git that is not executable, or a directory, is passed over.
	if err := os.Chmod(nextToExe, 0o644); err != nil {
		t.Fatal(err)
	}
	check("not executable", "", exe, arg0, lookPath, nextToArg, "")
	if err := os.Remove(nextToArg); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(nextToArg, 0o755); err != nil {
		t.Fatal(err)
	}
	check("directory", "", exe, arg0, lookPath, onPath, "")

	// BL_GIT wins, and is not second-guessed when wrong.
	other := writeExe(t, filepath.Join(root, "other", "my-bl-git"), 0o755)
	check("env", other, exe, arg0, lookPath, other, "")
	check("env missing", filepath.Join(root, "nope"), exe, arg0, lookPath, "", "BL_GIT="+filepath.Join(root, "nope")+" is not an executable file")
	// A bare name in BL_GIT is looked up on PATH.
	check("env bare", blGitName(), exe, arg0, lookPath, onPath, "")
	check("env bare missing", "no-such-bl-git", exe, arg0, lookPath, "", "BL_GIT=no-such-bl-git")
}

func TestInGitRepo(t *testing.T) {
	root := t.TempDir()
	if dotGitAbove(root) || dotGitAbove(resolveExisting(root)) {
		t.Skip("the temporary directory is inside a git repository")
	}
	if inGitRepo(filepath.Join(root, "x", ".backlog")) {
		t.Error("a directory outside any repository is in one")
	}
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not created yet, deep inside.
	if !inGitRepo(filepath.Join(repo, "a", "b", ".backlog")) {
		t.Error("a directory inside a repository is not in one")
	}
	// Reached through a symbolic link from outside.
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(repo, "a"), link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !inGitRepo(filepath.Join(link, "sub", ".backlog")) {
		t.Error("a directory reached through a link into a repository is not in one")
	}
	// A linked worktree's .git is a file.
	wt := filepath.Join(root, "wt")
	writeExe(t, filepath.Join(wt, ".git"), 0o644)
	if !inGitRepo(filepath.Join(wt, ".backlog")) {
		t.Error("a worktree with a .git file is not in a repository")
	}
}

// TestHandoverEnv: bl passes its version to bl-git, which compares it with
// its own (lean.txtar checks the warning).
func TestHandoverEnv(t *testing.T) {
	want := handoverVersionEnv + "=" + binaryVersion()
	env := handoverEnv()
	if !slices.Contains(env, want) || !slices.Contains(env, handedOverEnv+"=1") {
		t.Errorf("hand-over environment lacks %s or the hand-over mark", want)
	}
}
