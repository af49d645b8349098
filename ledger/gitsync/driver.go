package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// MergeDriver is the git merge driver for ledger.jsonl and archive
// segments (git runs `bl merge-driver %O %A %B`): it writes the events of
// the base, ours and theirs, each once, in (at, id) order, into ours.
// Undecodable input is an error and leaves ours untouched, so git reports
// a conflict instead of committing damage.
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
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(ours), ".bl-merge-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(merged); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if fi, err := os.Stat(ours); err == nil {
		_ = os.Chmod(tmp.Name(), fi.Mode().Perm())
	}
	return os.Rename(tmp.Name(), ours)
}

// The merge drivers bl init configures. The snapshot's driver keeps our
// side ("true" succeeds and leaves %A as it is): bl rebuilds a snapshot
// that no longer matches the merged ledger the next time it opens the
// backlog, so it works even where bl is not installed.
const (
	LedgerDriver   = "bl merge-driver %O %A %B"
	SnapshotDriver = "true"
)

// MergeSetup says what SetupMerge did.
type MergeSetup struct {
	Attributes string `json:"attributes"` // the .gitattributes file
	Config     string `json:"config"`     // the git config file
	Changed    bool   `json:"changed"`    // either file was written
}

// SetupMerge makes plain git merge, pull and rebase merge the backlog in
// dir by event: it adds the backlog's lines to .gitattributes at the
// worktree root and defines the merge drivers in the repository's git
// config (.git/config), keeping whatever is there. It is idempotent. A
// directory outside any git repository gives ErrNoRepo.
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
	_, common, err := gitDirs(root)
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
	out.Config = filepath.Join(common, "config")
	lines := []string{
		prefix + ledger.LedgerFile + " merge=bl -text",
		prefix + ledger.ArchiveDir + "/*.jsonl merge=bl -text",
		prefix + ledger.SnapshotFile + " merge=bl-snapshot -text",
		prefix + "*.md merge=bl-snapshot -text",
	}
	changed, err := addLines(out.Attributes, "# bl: merge the backlog by event, never with conflict markers (bl help init)", lines)
	if err != nil {
		return out, err
	}
	out.Changed = changed
	changed, err = addMergeDrivers(out.Config)
	out.Changed = out.Changed || changed
	return out, err
}

// addLines appends the lines file lacks, under a comment.
func addLines(path, comment string, lines []string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range lines {
		if !have[l] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return false, nil
	}
	var b bytes.Buffer
	b.Write(data)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		b.WriteByte('\n')
	}
	if !have[comment] {
		b.WriteString(comment + "\n")
	}
	for _, l := range add {
		b.WriteString(l + "\n")
	}
	return true, writeLocked(path, b.Bytes())
}

var mergeSection = regexp.MustCompile(`(?m)^\s*\[merge\s+"([^"]+)"\]`)

// addMergeDrivers defines [merge "bl"] and [merge "bl-snapshot"] in a git
// config file unless they are defined already (perhaps by hand, on
// purpose).
func addMergeDrivers(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	defined := map[string]bool{}
	for _, m := range mergeSection.FindAllSubmatch(data, -1) {
		defined[string(m[1])] = true
	}
	var b bytes.Buffer
	if !defined["bl"] {
		fmt.Fprintf(&b, "[merge \"bl\"]\n\tname = bl: union of ledger events in (at, id) order\n\tdriver = %s\n", LedgerDriver)
	}
	if !defined["bl-snapshot"] {
		fmt.Fprintf(&b, "[merge \"bl-snapshot\"]\n\tname = bl: keep our snapshot; bl rebuilds it\n\tdriver = %s\n", SnapshotDriver)
	}
	if b.Len() == 0 {
		return false, nil
	}
	out := append([]byte(nil), data...)
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return true, writeLocked(path, append(out, b.Bytes()...))
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
