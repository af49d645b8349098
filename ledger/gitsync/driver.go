package gitsync

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger"
)

// MergeDriver is the optional git merge driver for ledger.jsonl and
// archive segments (git runs `bl merge-driver %O %A %B` in a clone that
// configured it): it writes the events of the base, ours and theirs, each
// once, in (at, id) order, into ours. It only spares readers the sort of a
// union: what it writes folds like git's union of the same versions.
// Input that is not a valid event file (conflict markers, damage) falls
// back to git's union (ours, then theirs' lines ours lacks), so the driver
// never fails a merge that the tracked merge=union would make.
func MergeDriver(base, ours, theirs string) error {
	var versions [][]byte
	for _, p := range []string{base, ours, theirs} {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		versions = append(versions, data)
	}
	merged, err := ledger.MergeFiles(versions...)
	if err != nil {
		merged = unionLines(versions[1], versions[2])
	}
	return fsutil.ReplaceFile(ours, merged, nil)
}

// LedgerDriver is the command line of the optional bl merge driver, for a
// clone that configures it itself (bl help merge-driver).
const LedgerDriver = "bl merge-driver %O %A %B"

// MergeSetup says what SetupMerge did.
type MergeSetup struct {
	Attributes string `json:"attributes"` // the repository's root .gitattributes
	Config     string `json:"config"`     // unused: merging needs no git config
	Changed    bool   `json:"changed"`    // lines an older bl init wrote were removed
}

// SetupMerge checks that dir is inside a git repository (ErrNoRepo when it
// is not) and removes from the worktree's root .gitattributes the lines an
// older bl init wrote there for this backlog (merge=bl, merge=bl-snapshot,
// which needed a driver in each clone's .git/config). The backlog's own
// .gitattributes, which ledger.Init writes and git tracks with the
// backlog, replaces them: every clone merges with git's built-in union,
// with no setup. It is idempotent and leaves every other line alone.
func SetupMerge(dir string) (MergeSetup, error) {
	var out MergeSetup
	abs, err := filepath.Abs(dir)
	if err != nil {
		return out, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	root, err := worktreeRoot(abs)
	if err != nil {
		return out, err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return out, err
	}
	prefix := "/"
	if rel != "." {
		prefix = filepath.ToSlash(rel) + "/"
	}
	out.Attributes = filepath.Join(root, ".gitattributes")
	old := []string{
		"# bl: merge the backlog by event, never with conflict markers (bl help init)",
		prefix + ledger.LedgerFile + " merge=bl -text",
		prefix + ledger.ArchiveDir + "/*.jsonl merge=bl -text",
		prefix + ledger.SnapshotFile + " merge=bl-snapshot -text",
		prefix + "*.md merge=bl-snapshot -text",
	}
	out.Changed, err = removeLines(out.Attributes, old)
	return out, err
}

// removeLines removes from the file at path the lines equal (trimmed) to
// one of lines, and the file itself when nothing else is left. It reports
// whether it changed anything.
func removeLines(path string, lines []string) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	drop := map[string]bool{}
	for _, l := range lines {
		drop[l] = true
	}
	var keep []string
	changed := false
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l != "" && drop[strings.TrimSpace(l)] {
			changed = true
			continue
		}
		keep = append(keep, l)
	}
	if !changed {
		return false, nil
	}
	rest := strings.Join(keep, "")
	if strings.TrimSpace(rest) == "" {
		return true, os.Remove(path)
	}
	return true, writeLocked(path, []byte(rest))
}

// writeLocked replaces path using git's lock file, as git does.
func writeLocked(path string, data []byte) error {
	return withLockFile(path, lockTimeout, func(f *os.File) error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		if fi, err := os.Stat(path); err == nil {
			_ = os.Chmod(f.Name(), fi.Mode().Perm())
		}
		return nil
	})
}

// unionLines is ours followed by the lines of theirs that ours lacks: what
// git's union keeps of two versions, line for line.
func unionLines(ours, theirs []byte) []byte {
	have := map[string]bool{}
	for _, l := range bytes.SplitAfter(ours, []byte("\n")) {
		have[string(bytes.TrimRight(l, "\r\n"))] = true
	}
	out := append([]byte(nil), ours...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	for _, l := range bytes.SplitAfter(theirs, []byte("\n")) {
		if k := string(bytes.TrimRight(l, "\r\n")); k != "" && !have[k] {
			have[k] = true
			out = append(out, bytes.TrimRight(l, "\r\n")...)
			out = append(out, '\n')
		}
	}
	return out
}
