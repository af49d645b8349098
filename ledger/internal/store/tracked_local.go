package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/gitdir"
)

// Some files of a backlog are local to one clone by design: the lock,
// what recovery set aside, the caches (cache/: the snapshot index, the
// history seen, the quarantine list, the snapshot last checked, lease
// lines, noted heartbeats, the daemon's socket, ...), a change in flight,
// and the clone's own hooks.json and arbiter.json. bl init's .gitignore
// lists them, but `git add -f` bypasses it, and git overwrites an ignored
// file when it checks out a tracked one at its path: a teammate who
// force-adds such a file replaces every receiving clone's own. Such a file
// is a teammate's bytes, never this clone's record, so bl does not believe
// it: each reader that trusts a cache asks TrustLocal (off the hot path:
// the sync, doctor and quarantine paths, and the snapshot check that runs
// only when git brought a new snapshot), bl names the files once on
// stderr (NoteTrackedLocal) and in bl doctor, and bl doctor --repair
// untracks them.

// LocalByDesign reports whether name, slash-separated and relative to the
// backlog, is a file bl keeps local to a clone.
func LocalByDesign(name string) bool {
	switch name {
	case LockFile, HooksFile, ArbiterFile, CacheDir, StagingDir: // the directories: as a link or a submodule
		return true
	}
	base := path.Base(name)
	return strings.HasPrefix(name, CacheDir+"/") || strings.HasPrefix(name, StagingDir+"/") ||
		strings.HasSuffix(base, ".broken") || strings.HasPrefix(base, ".") && strings.Contains(base, ".tmp-")
}

// HooksFile and ArbiterFile are the clone's own settings for hooks and a
// claim arbiter (packages hooks and arbiter read them).
const (
	HooksFile   = "hooks.json"
	ArbiterFile = "arbiter.json"
)

// TrackedLocal lists the files of the backlog in dir that git tracks
// although they are local by design, by name relative to the backlog.
// Outside git it lists none. known is false when git's index cannot be
// read here (a split index): the system git is asked then.
func TrackedLocal(dir string) (names []string, known bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, false
	}
	root, err := gitdir.Root(abs)
	if err != nil {
		return nil, true // not in git: nothing is tracked
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, false
	}
	prefix := filepath.ToSlash(rel) + "/"
	if rel == "." {
		prefix = ""
	}
	all, ok := gitdir.TrackedUnder(root, prefix)
	if !ok {
		out, err := gitdir.Run(context.Background(), abs, "ls-files", "-z", "--", ".")
		if err != nil {
			return nil, false
		}
		all = nil
		for _, n := range strings.Split(string(out), "\x00") {
			if n != "" {
				all = append(all, prefix+n)
			}
		}
	}
	for _, n := range all {
		if n = strings.TrimPrefix(n, prefix); LocalByDesign(n) {
			names = append(names, n)
		}
	}
	return names, true
}

// TrustLocal reports whether this clone may believe its local file name
// (relative to the backlog in dir): not when git tracks it, as then its
// bytes came with a checkout. One read of git's index; an index bl cannot
// read here is asked of the system git.
func TrustLocal(dir, name string) bool {
	tracked, err := trackedLocal(dir, name)
	return err == nil && !tracked
}

// trackedLocal reports whether git tracks the local file name, or why it
// cannot tell.
func trackedLocal(dir, name string) (bool, error) {
	abs, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return false, err
	}
	root, err := gitdir.Root(filepath.Dir(abs))
	if err != nil {
		return false, nil // not in git: nothing checks it out
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return false, err
	}
	// A directory on the way (cache, .staging) that git tracks as a
	// link or a submodule makes the file a teammate's as well: git's
	// index holds the directory, not the file.
	p := filepath.ToSlash(rel)
	ancestors := []string{p}
	for range strings.Count(path.Clean(filepath.ToSlash(name)), "/") {
		p = path.Dir(p)
		ancestors = append(ancestors, p)
	}
	if held, known := gitdir.TrackedUnder(root, p); known {
		return slices.ContainsFunc(ancestors, func(a string) bool { return slices.Contains(held, a) }), nil
	}
	for _, a := range ancestors {
		if is, err := gitdir.Tracked(context.Background(), root, filepath.FromSlash(a)); err != nil || is {
			return is, err
		}
	}
	return false, nil
}

// errTrackedLocal: a local file git tracks is not written (the user's
// worktree would change); bl doctor --repair untracks it.
var errTrackedLocal = errors.New("git tracks this local file: bl doctor --repair untracks it")

// TrackedLocalMessage names the local files git tracks and what bl does
// about them.
func TrackedLocalMessage(dir string, names []string) string {
	return fmt.Sprintf("git tracks %s in %s, local to each clone by design (a teammate force-added them, and git replaced this clone's own): bl does not believe them; bl doctor --repair untracks them",
		strings.Join(names, ", "), dir)
}

// trackedNotedFile remembers the tracked local files last named, so a
// warning is given once per set.
const trackedNotedFile = CacheDir + "/tracked-local"

// NoteTrackedLocal warns, once for each set of names, of the local files
// of the backlog in dir that git tracks.
func NoteTrackedLocal(dir string, warn func(string)) {
	names, _ := TrackedLocal(dir)
	record := filepath.Join(dir, trackedNotedFile)
	want := strings.Join(names, "\n")
	// The record itself may be a teammate's: then it vouches for nothing.
	if had, err := os.ReadFile(record); err == nil && string(had) == want && !slices.Contains(names, trackedNotedFile) {
		return
	} else if err != nil && len(names) == 0 {
		return
	}
	if len(names) > 0 && warn != nil {
		warn(TrackedLocalMessage(dir, names))
	}
	if CheckLocalPath(dir, trackedNotedFile) == nil && os.MkdirAll(filepath.Dir(record), 0o755) == nil {
		_ = fsutil.ReplaceFile(record, []byte(want), nil) // lost, it warns again
	}
}

// NoteTrackedLocal is NoteTrackedLocal with the handle's warnings.
func (b *Store) NoteTrackedLocal() { NoteTrackedLocal(b.dir, b.warn) }

// AppendBroken appends data to the backlog's ledger.jsonl.broken. bl
// writes that file as a regular file: anything else at its path (a
// symbolic link a teammate committed, to .git/config say) is removed
// first, never written through, so setting a teammate's damaged lines
// aside still works.
func AppendBroken(dir string, data []byte) error {
	if err := clearTeammates(dir, BrokenFile); err != nil {
		return err
	}
	return fsutil.AppendSync(filepath.Join(dir, BrokenFile), data)
}

// clearTeammates removes what a teammate committed at the path of the
// local file name that bl appends to: a link (never written through), or
// a directory holding files git tracks (they are in git; left there, the
// append fails and so every command of every clone that pulled it).
func clearTeammates(dir, name string) error {
	path := filepath.Join(dir, filepath.FromSlash(name))
	fi, err := os.Lstat(path)
	switch {
	case err != nil || fi.Mode().IsRegular():
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		return os.Remove(path)
	case fi.IsDir():
		if abs, err := filepath.Abs(path); err == nil {
			if root, err := gitdir.Root(filepath.Dir(abs)); err == nil {
				if rel, err := filepath.Rel(root, abs); err == nil {
					if held, _ := gitdir.TrackedUnder(root, filepath.ToSlash(rel)+"/"); len(held) > 0 {
						return os.RemoveAll(path)
					}
				}
			}
		}
	}
	return nil
}
