package repair

// bl doctor --repair: what can be fixed without losing an event.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"github.com/bl-backlog/bl/lock"
)

// Repair takes the lock and fixes what can be fixed without losing an
// event: a torn tail is set aside into ledger.jsonl.broken, a final event
// that lost its newline gets it back, and a ledger with blank lines or git
// conflict markers is rewritten without them, every event once in (at, id)
// order (repeated lines copied to .broken first); a stale snapshot is
// rebuilt (store.Normalize). Lines out of order or repeated alone are not
// damage and are left as they are. Damage that would lose an event (a
// complete line that fails its checksum, a line from a newer bl, two
// different lines sharing an event id, a damaged snapshot) is left alone
// and reported as ErrCorrupt. The returned report describes the backlog
// after repair, with Repaired saying what was done.
func Repair(ctx context.Context, dir string, timeout time.Duration, now time.Time) (*Report, error) {
	lk := lock.New(filepath.Join(dir, store.LockFile))
	if err := lk.Acquire(ctx, timeout); err != nil {
		return nil, err
	}
	defer lk.Release()
	// Finish (or drop) a multi-file change cut short before judging the
	// files, as every opener does.
	if err := store.RollForward(dir); err != nil {
		return nil, err
	}
	store.RemoveTemps(dir)
	done, err := quarantineGit(dir)
	if err != nil {
		return nil, err
	}
	rep, lines, err := diagnose(dir, now)
	if err != nil {
		return nil, err
	}
	if err := unrepairable(dir, rep); err != nil {
		return rep, err
	}
	fixed, err := fix(dir, rep, lines)
	if err != nil {
		return rep, err
	}
	done = append(done, fixed...)
	untracked, err := untrackLocal(ctx, dir)
	if err != nil {
		return rep, err
	}
	done = append(done, untracked...)
	if links, err := store.RemoveLocalLinks(dir); err != nil {
		return rep, err
	} else if len(links) > 0 {
		done = append(done, fmt.Sprintf("removed the symbolic links %s below the backlog's cache (bl makes its own files there)", strings.Join(links, ", ")))
	}
	after, _, err := diagnose(dir, now)
	if err != nil {
		return nil, err
	}
	after.Repaired = append(after.Repaired, done...)
	return after, nil
}

// fix makes the repairs a diagnosis calls for, each with what it did:
// the archive segments first, then the ledger, and the snapshot rebuilt
// from both when it is stale.
func fix(dir string, rep *Report, lines []rawLine) (done []string, err error) {
	// A stale snapshot, or one no history produces (forged), is rebuilt
	// from the events.
	stale := len(rep.Stale) > 0 || slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.File == store.SnapshotFile && d.Repairable })
	other := slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.File == store.LedgerFile })
	if slices.ContainsFunc(rep.Damage, func(d Damage) bool { return strings.HasPrefix(d.File, store.ArchiveDir+"/") }) {
		n, err := repairSegments(dir)
		if err != nil {
			return done, err
		}
		done = append(done, fmt.Sprintf("dropped the git conflict markers and lines stamped outside the range bl accepts (moved to %s) from %d archive segment(s), keeping every other event once, in (at, id) order", store.BrokenFile, n))
		stale = true // the snapshot folded what the segments held before
	}
	switch {
	case other:
		msg, err := rewriteLedger(dir, lines, rep.TornTail)
		if err != nil {
			return done, err
		}
		done = append(done, msg)
	case stale:
		// Normalize sets a torn tail aside and rewrites every line.
	case rep.TornTail != nil:
		if err := store.SetAside(dir, rep.TornTail); err != nil {
			return done, err
		}
	case rep.LostNewline > 0:
		if err := store.RestoreNewline(filepath.Join(dir, store.LedgerFile), rep.Bytes); err != nil {
			return done, err
		}
	}
	if stale {
		msgs, err := rebuild(dir)
		if err != nil {
			return done, err
		}
		done = append(done, msgs...)
	}
	// Each of the above sets a torn tail aside and ends the last line.
	if rep.TornTail != nil {
		done = append(done, fmt.Sprintf("set aside a torn tail of %d bytes at line %d into %s", rep.TornTail.Bytes, rep.TornTail.Line, store.BrokenFile))
	}
	if rep.LostNewline > 0 {
		done = append(done, fmt.Sprintf("restored the newline line %d (the last event) had lost", rep.LostNewline))
	}
	return done, nil
}

// quarantineGit sets aside, in a git work tree, the lines git brought
// into the ledger that do not read, and says so.
func quarantineGit(dir string) (done []string, err error) {
	root, err := gitdir.Root(dir)
	if err != nil {
		return nil, nil // not in git: nothing git brought
	}
	n, _, err := store.QuarantineStaged(dir, root)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		done = append(done, fmt.Sprintf("quarantined %d line(s) git brought into %s that do not read (moved to %s; bl sync --push takes them off the branch)", n, store.LedgerFile, store.BrokenFile))
	}
	return done, nil
}

// unrepairable is the error for the first damage no repair undoes
// without losing an event: git holds what is lost.
func unrepairable(dir string, rep *Report) error {
	for _, d := range rep.Damage {
		if !d.Repairable {
			return wire.Errorf(wire.ErrCorrupt, "%s line %d (byte offset %d): %s; it cannot be repaired without losing an event: restore it from git (git log -p -- %s) and run bl doctor again",
				filepath.Join(dir, d.File), d.Line, d.Offset, d.Reason, gitPath(dir, d.File))
		}
	}
	return nil
}

// rewriteLedger rewrites the ledger in canonical form and says what it
// dropped or moved aside.
func rewriteLedger(dir string, lines []rawLine, torn *wire.TornTail) (string, error) {
	dups, blanks, err := rewriteCanonical(dir, lines, torn)
	if err != nil {
		return "", err
	}
	markers, stamped := 0, 0
	for _, l := range lines {
		if errors.Is(l.err, wire.ErrConflictMarkers) {
			markers++
		}
		if errors.Is(l.err, wire.ErrStampRange) {
			stamped++
		}
	}
	msg := fmt.Sprintf("rewrote %s with every event once, in (at, id) order", store.LedgerFile)
	if markers > 0 {
		msg += fmt.Sprintf("; dropped %d line(s) of git conflict markers", markers)
	}
	if stamped > 0 {
		msg += fmt.Sprintf("; moved %d line(s) stamped outside the range bl accepts to %s", stamped, store.BrokenFile)
	}
	if blanks -= markers + stamped; blanks > 0 {
		msg += fmt.Sprintf("; dropped %d blank line(s)", blanks)
	}
	if dups > 0 {
		msg += fmt.Sprintf("; dropped %d duplicate line(s), copied to %s", dups, store.BrokenFile)
	}
	return msg, nil
}

// rebuild writes the snapshot and archive segments again from every
// event, and says so, and what a revert or reset took.
func rebuild(dir string) (done []string, err error) {
	_, lost, err := store.Normalize(dir)
	if err != nil {
		return nil, err
	}
	done = append(done, "rebuilt the snapshot and archive segments from every event the backlog holds")
	if lost != nil {
		done = append(done, fmt.Sprintf("the snapshot counted %d event(s) the files no longer hold (a git revert or reset): rebuilt from the %d there are", lost.Claimed-lost.Held, lost.Held))
	}
	return done, nil
}

// repairSegments rewrites every archive segment that holds git conflict
// marker lines without them: its events sorted, each once. The caller holds
// the lock and rebuilds the snapshot after. Any other damage in a segment
// fails the repair, changing nothing more.
func repairSegments(dir string) (int, error) {
	names, err := store.ArchiveNames(dir)
	if err != nil {
		return 0, err
	}
	n, asideLines := 0, 0
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		data, err := os.ReadFile(path)
		if err != nil {
			return n, err
		}
		var kept, aside []byte
		markers := 0
		for _, l := range bytes.SplitAfter(data, []byte{'\n'}) {
			if wire.ConflictMarker(bytes.TrimRight(l, "\r\n")) {
				markers++
				continue
			}
			if _, err := wire.DecodeLine(l); errors.Is(err, wire.ErrStampRange) {
				aside = appendLine(aside, l) // kept in .broken, not folded
				markers++
				continue
			}
			kept = append(kept, l...)
		}
		if markers == 0 {
			continue
		}
		if len(aside) > 0 {
			if err := store.AppendBroken(dir, aside); err != nil {
				return n, err
			}
			asideLines += bytes.Count(aside, []byte{'\n'})
		}
		settled, err := store.SettleData(path, kept)
		if err != nil {
			return n, err
		}
		if err := fsutil.ReplaceFile(path, settled, nil); err != nil {
			return n, err
		}
		n++
	}
	if asideLines > 0 {
		return n, dropShortSnapshot(dir, asideLines)
	}
	return n, nil
}

// GitPath names a backlog file for git (git log -p -- PATH): relative to
// the top of the repository that holds it, or as given when there is none.
func GitPath(dir, name string) string { return gitPath(dir, name) }

func gitPath(dir, name string) string {
	p := filepath.Join(dir, name)
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	top, err := gitdir.Root(filepath.Dir(abs))
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(top, abs); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

// rewriteCanonical replaces the ledger with its events, each once, sorted
// by (at, id), every line ended, atomically: temp file, fsync, rename,
// fsync dir. Dropped duplicates and any torn tail go to the .broken file
// first; blank lines hold nothing and are just dropped. lines must hold no
// damage other than blank lines.
func rewriteCanonical(dir string, lines []rawLine, torn *wire.TornTail) (dups, blanks int, err error) {
	seen := map[string]int{} // event id -> index in keep
	var keep []rawLine
	var dropped []byte
	for _, l := range lines {
		if l.event == nil {
			if errors.Is(l.err, wire.ErrStampRange) {
				dropped = appendLine(dropped, l.bytes) // kept, not folded
			}
			blanks++
			continue
		}
		i, dup := seen[l.event.ID]
		if !dup {
			seen[l.event.ID] = len(keep)
			keep = append(keep, l)
			continue
		}
		if wire.LaterCopy(l.event, keep[i].event) { // a re-stamp (settle.go)
			keep[i], l = l, keep[i]
		}
		dropped = append(dropped, l.bytes...)
		if !bytes.HasSuffix(dropped, []byte{'\n'}) {
			dropped = append(dropped, '\n')
		}
		dups++
	}
	slices.SortStableFunc(keep, func(a, b rawLine) int { return wire.ByAtID(a.event, b.event) })
	path := filepath.Join(dir, store.LedgerFile)
	if torn != nil {
		data, err := os.ReadFile(path)
		if err != nil {
			return 0, 0, err
		}
		dropped = append(dropped, data[torn.Offset:]...)
	}
	if len(dropped) > 0 {
		if !bytes.HasSuffix(dropped, []byte{'\n'}) {
			dropped = append(dropped, '\n')
		}
		if err := store.AppendBroken(dir, dropped); err != nil {
			return 0, 0, err
		}
	}
	var buf bytes.Buffer
	for _, l := range keep {
		buf.Write(l.bytes)
		if !bytes.HasSuffix(l.bytes, []byte{'\n'}) {
			buf.WriteByte('\n') // the last line lost its newline
		}
	}
	return dups, blanks, fsutil.ReplaceFile(path, buf.Bytes(), nil)
}

// appendLine appends line to dst, ending it with a newline if it has none.
func appendLine(dst, line []byte) []byte {
	dst = append(dst, line...)
	if !bytes.HasSuffix(dst, []byte{'\n'}) {
		dst = append(dst, '\n')
	}
	return dst
}

// untrackLocal takes out of git's index the files of the backlog that are
// local by design (store.LocalByDesign) and that git tracks: git rm
// --cached, so the next commit takes them off the branch. The caches and a
// journal among them are a teammate's bytes: deleted, bl rebuilds what it
// needs. The lock and what recovery set aside stay. hooks.json and
// arbiter.json stay tracked: untracked, bl would believe them (and run
// the hooks), so the user decides (see trackedLocalWarnings).
func untrackLocal(ctx context.Context, dir string) (done []string, err error) {
	names, _ := store.TrackedLocal(dir)
	names = slices.DeleteFunc(names, func(n string) bool { return n == store.HooksFile || n == store.ArbiterFile })
	if len(names) == 0 {
		return nil, nil
	}
	args := []string{"rm", "--cached", "-q", "--ignore-unmatch", "--"}
	for _, n := range names {
		args = append(args, filepath.FromSlash(n))
	}
	if _, err := gitdir.Run(ctx, dir, args...); errors.Is(err, gitdir.ErrNoGit) {
		return nil, nil // the warning stays, with what to run
	} else if err != nil {
		return nil, fmt.Errorf("untrack the local files git tracks (%s): %w", strings.Join(names, ", "), err)
	}
	for _, n := range names {
		if n == store.CacheDir || n == store.StagingDir {
			// A link git tracked in the directory's place goes; a
			// submodule's checkout is the user's to remove.
			if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				if err := os.Remove(filepath.Join(dir, n)); err != nil {
					return nil, err
				}
			}
		} else if strings.HasPrefix(n, store.CacheDir+"/") || strings.HasPrefix(n, store.StagingDir+"/") {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(n))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	return []string{fmt.Sprintf("untracked %s (git rm --cached; commit it to take them off the branch) and deleted the cache copies a teammate's push had put there", strings.Join(names, ", "))}, nil
}
