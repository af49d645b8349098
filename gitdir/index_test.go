package gitdir

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRun runs the real git in dir, with the user's and the system's
// configuration out of the way.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestStagedPrefixAgainstGit builds indexes with the real git in every
// format it writes and checks the reader against them: the staged bytes
// match, bytes appended after them still match as a prefix, and a changed
// byte does not.
func TestStagedPrefixAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	const rel = ".backlog/ledger.jsonl"
	content := "line one\nline two\n"
	cases := []struct {
		name  string
		init  []string
		setup [][]string
		want  bool // the reader follows this index
	}{
		{"v2", []string{"init", "-q"}, [][]string{{"update-index", "--index-version", "2"}}, true},
		{"v3", []string{"init", "-q"}, [][]string{{"update-index", "--index-version", "3"}, {"update-index", "--skip-worktree", "a/other"}}, true},
		{"v4", []string{"init", "-q"}, [][]string{{"update-index", "--index-version", "4"}}, true},
		{"sha256", []string{"init", "-q", "--object-format=sha256"}, nil, true},
		{"split", []string{"init", "-q"}, [][]string{{"update-index", "--split-index"}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			gitRun(t, root, c.init...)
			for _, f := range []string{"a/other", ".backlog/aaa", rel, ".backlog/zzz/deep/name-that-is-long.jsonl"} {
				p := filepath.Join(root, filepath.FromSlash(f))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gitRun(t, root, "add", "-A")
			gitRun(t, root, "commit", "-qm", "one")
			for _, s := range c.setup {
				gitRun(t, root, s...)
			}
			if h := Head(root); h != strings.TrimSpace(gitRun(t, root, "rev-parse", "HEAD")) {
				t.Fatalf("Head = %q", h)
			}
			n, ok := StagedPrefix(root, rel, []byte(content))
			if ok != c.want || ok && n != len(content) {
				t.Fatalf("StagedPrefix = %d, %v; want %v", n, ok, c.want)
			}
			if !c.want {
				return
			}
			if n, ok := StagedPrefix(root, rel, []byte(content+"appended\n")); !ok || n != len(content) {
				t.Fatalf("with lines appended: %d, %v", n, ok)
			}
			if _, ok := StagedPrefix(root, rel, []byte(strings.Replace(content, "two", "twx", 1))); ok {
				t.Fatal("a changed byte matched")
			}
			if _, ok := StagedPrefix(root, ".backlog/missing", []byte(content)); ok {
				t.Fatal("an untracked path matched")
			}
		})
	}
}

// TestStagedPrefixLinkedWorktree: a linked worktree has its own index.
func TestStagedPrefixLinkedWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	main := filepath.Join(root, "main")
	os.MkdirAll(main, 0o755)
	gitRun(t, main, "init", "-q")
	os.WriteFile(filepath.Join(main, "f"), []byte("x\n"), 0o644)
	gitRun(t, main, "add", "f")
	gitRun(t, main, "commit", "-qm", "one")
	wt := filepath.Join(root, "wt")
	gitRun(t, main, "worktree", "add", "-q", "-b", "b", wt)
	os.WriteFile(filepath.Join(wt, "f"), []byte("y\n"), 0o644)
	gitRun(t, wt, "commit", "-qam", "two")
	if _, ok := StagedPrefix(wt, "f", []byte("y\n")); !ok {
		t.Fatal("the linked worktree's own index was not read")
	}
	if _, ok := StagedPrefix(wt, "f", []byte("x\n")); ok {
		t.Fatal("the main worktree's index was read for the linked one")
	}
}

func FuzzStagedEntry(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"), 0)
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x02"+strings.Repeat("\x00", 62)+"\x00\x01a\x00"), 4)
	// A split index: no entries, a link to no shared index, two bitmaps.
	ewah := "\x00\x00\x00\x40\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00"
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00link\x00\x00\x00\x3c"+strings.Repeat("\x00", 20)+ewah+ewah+strings.Repeat("\x00", 20)), 0)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte, _ int) {
		stagedEntry(dir, raw, "a", sha1.Size) // must not panic
	})
}

// TestStagedPrefixCRLF: a file whose attributes make git write it with
// CRLF line ends (eol=crlf, as a teammate can push in .gitattributes) is
// still the blob the index names.
func TestStagedPrefixCRLF(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	gitRun(t, root, "init", "-q")
	const rel = ".backlog/ledger.jsonl"
	path := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".gitattributes"), []byte("*.jsonl text eol=crlf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, root, "add", "-A")
	gitRun(t, root, "commit", "-qm", "x")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	gitRun(t, root, "checkout", "--", rel)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "line one\r\nline two\r\n" {
		t.Fatalf("git wrote %q, want CRLF line ends", data)
	}
	if n, ok := StagedPrefix(root, rel, append(data, "local\n"...)); !ok || n != len(data) {
		t.Fatalf("StagedPrefix of the CRLF file git wrote = %d, %v; want %d, true", n, ok, len(data))
	}
	data[3] = 'X'
	if _, ok := StagedPrefix(root, rel, data); ok {
		t.Fatal("a changed byte still matches")
	}
}

// TestSplitIndexAgainstGit: under core.splitIndex the index git writes
// holds only the entries changed since its shared index; the reader
// merges the two and must agree with git ls-files about every entry,
// through replacements, deletions and additions over several
// generations, for SHA-1 and SHA-256.
func TestSplitIndexAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			root := t.TempDir()
			gitRun(t, root, "init", "-q", "--object-format="+format)
			gitRun(t, root, "config", "core.splitIndex", "true")
			gitRun(t, root, "config", "splitIndex.maxPercentChange", "100")
			write := func(name, content string) {
				p := filepath.Join(root, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 150; i++ {
				write(fmt.Sprintf("d%d/f%03d", i%7, i), fmt.Sprintf("file %d\n", i))
			}
			gitRun(t, root, "add", "-A")
			gitRun(t, root, "commit", "-qm", "one")
			gitRun(t, root, "update-index", "--split-index")
			steps := []func(){
				func() { write("d1/f001", "changed\n"); gitRun(t, root, "add", "d1/f001") },
				func() { gitRun(t, root, "rm", "-q", "d2/f002", "d3/f003") },
				func() { write("new/a", "a\n"); write(".backlog/ledger.jsonl", "x\n"); gitRun(t, root, "add", "-A") },
				func() {
					for i := 10; i < 140; i += 3 {
						write(fmt.Sprintf("d%d/f%03d", i%7, i), "again\n")
					}
					gitRun(t, root, "add", "-A")
					gitRun(t, root, "rm", "-q", "--cached", "d4/f004")
				},
				func() { gitRun(t, root, "commit", "-qm", "two") },
				func() {
					write(".backlog/cache/seen.json", "{}\n")
					gitRun(t, root, "add", "-f", ".backlog/cache/seen.json")
				},
			}
			for i, step := range steps {
				step()
				gitDir := filepath.Join(root, ".git")
				if i == 0 {
					if m, _ := filepath.Glob(filepath.Join(gitDir, "sharedindex.*")); len(m) == 0 {
						t.Fatal("git wrote no shared index")
					}
				}
				want := map[string]string{}
				for _, l := range strings.Split(strings.TrimSpace(gitRun(t, root, "ls-files", "-s")), "\n") {
					meta, name, _ := strings.Cut(l, "\t")
					f := strings.Fields(meta)
					want[name] = f[1]
				}
				got := map[string]string{}
				raw, err := os.ReadFile(filepath.Join(gitDir, "index"))
				if err != nil {
					t.Fatal(err)
				}
				hashSize := sha1.Size
				if format == "sha256" {
					hashSize = 32
				}
				if err := indexEntries(gitDir, raw, hashSize, func(name, oid []byte, _ uint32, _ int) {
					got[string(name)] = hex.EncodeToString(oid)
				}); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !maps.Equal(got, want) {
					t.Fatalf("step %d: read %d entries, git lists %d\nread %v\ngit  %v", i, len(got), len(want), got, want)
				}
				held, known := Holds(root, ".backlog/cache/seen.json")
				if !known || held != (i == len(steps)-1) {
					t.Fatalf("step %d: Holds(seen.json) = %v, %v", i, held, known)
				}
			}
		})
	}
}
