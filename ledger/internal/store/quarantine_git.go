package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Lines that arrive through git itself — a plain git pull, merge, rebase,
// cherry-pick, revert or reset — are read from the working ledger, where
// damage in the middle is otherwise an error (local damage must not be
// guessed about). A damaged line git put there is not local damage: it is
// a teammate's push, and one bad push must not stop every clone. So when
// the ledger does not read, the lines git's index holds for it (the bytes
// git last wrote or staged, checked by their blob id) are quarantined as a
// fetched tree's are: each line that does not read is moved to
// ledger.jsonl.broken, listed in the quarantine, named in a warning, and
// the ledger rewritten without it under the lock. Committing the result
// (bl sync --push, or git commit and push) takes it off the branch for
// everyone. Lines after the staged bytes — this clone's appends since —
// are never touched: damage there stays an error for bl doctor.

// FromGit is the Quarantined.From of a line git wrote into the ledger.
const FromGit = "git"

// setAsideFromGit answers a load that failed with cause: when cause is
// damage in the ledger, and the damaged lines are among the bytes git's
// index holds for it, it quarantines them and reports true (the caller
// loads again). Otherwise it changes nothing and reports false. The
// caller holds b.mu; the writers' lock is taken here unless held.
func (b *Store) setAsideFromGit(cause error) bool {
	var ce *wire.CorruptError
	switch {
	case errors.Is(cause, wire.ErrVersion):
		return false
	case errors.As(cause, &ce) && filepath.Base(ce.Path) == LedgerFile:
	case errors.Is(cause, wire.ErrSharedID):
		// A ledger line reusing an archived event's id, met when the
		// files are brought to their normal form.
	default:
		return false
	}
	root, err := gitdir.Root(b.dir)
	if err != nil {
		return false
	}
	path := filepath.Join(b.dir, LedgerFile)
	if !b.holding {
		// Another command may quarantine the same lines while this one
		// waits for the lock: a ledger replaced meanwhile is loaded again,
		// as it no longer matches git's index.
		before, _ := os.Stat(path)
		if err := b.lk.Acquire(context.Background(), b.opts.LockTimeout); err != nil {
			return false
		}
		defer b.lk.Release()
		if after, err := os.Stat(path); before != nil && err == nil && !sameFile(before, after) {
			return true
		}
	}
	removed, fresh, err := QuarantineStaged(b.dir, root)
	if err != nil {
		b.warn(fmt.Sprintf("could not set aside the damaged lines git brought into %s: %v", path, err))
		return false
	}
	for _, x := range fresh {
		b.warn(QuarantineMessage(x))
	}
	return removed > 0
}

// sameFile reports whether a and b describe the same file, unchanged.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// QuarantineStaged rewrites the ledger of the backlog in dir without the
// lines that do not read among the bytes git's index holds for it: how
// many it removed, and those not quarantined before. The caller holds the
// lock.
func QuarantineStaged(dir, root string) (removed int, fresh []Quarantined, err error) {
	path := filepath.Join(dir, LedgerFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, nil, err
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return 0, nil, err
	}
	n, ok := gitdir.StagedPrefix(root, filepath.ToSlash(rel), data)
	if !ok {
		return 0, nil, nil
	}
	kept, bad := quarantineLines(data[:n], FromGit, gitdir.Head(root), LedgerFile, reusedArchivedIDs(dir, data[:n]))
	if len(bad) == 0 {
		return 0, nil, nil
	}
	var aside []byte
	for _, x := range bad {
		aside = append(aside, x.raw...)
		if aside[len(aside)-1] != '\n' {
			aside = append(aside, '\n')
		}
	}
	// The bytes and the list first, then the ledger without them: a line
	// leaves the ledger only once it is kept in .broken and listed, and a
	// crash before the rewrite leaves the ledger as git wrote it.
	if err := AppendBroken(dir, aside); err != nil {
		return 0, nil, err
	}
	if fresh, err = RecordQuarantine(dir, bad); err != nil {
		return 0, nil, err
	}
	if err := fsutil.ReplaceFile(path, append(kept, data[n:]...), nil); err != nil {
		return 0, nil, err
	}
	return len(bad), fresh, nil
}

// reusedArchivedIDs names the lines of data (ledger lines) that give the
// id of an archived event to a different event: the archived one came
// first. It reads every archive segment, so it runs only once a load has
// failed.
func reusedArchivedIDs(dir string, data []byte) map[int]string {
	segs, err := Segments(dir)
	if err != nil || len(segs) < 2 {
		return nil
	}
	return reusedIDs(data, func(fn func(*wire.Event)) {
		_, _ = ArchivedEvents(segs[:len(segs)-1], wire.Cursor{}, func(a *wire.Event) error {
			fn(a)
			return nil
		})
	})
}

// reusedIDs names the lines of data (ledger lines, by 1-based number)
// that give the id of an event archived yields to a different event.
func reusedIDs(data []byte, archived func(func(*wire.Event))) map[int]string {
	type line struct {
		n int
		e *wire.Event
	}
	byID := map[string][]line{}
	n := 0
	for rest := data; len(rest) > 0; {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l = rest[:i+1]
		}
		rest = rest[len(l):]
		n++
		if e, err := wire.DecodeLine(l); err == nil {
			byID[e.ID] = append(byID[e.ID], line{n, e})
		}
	}
	if len(byID) == 0 {
		return nil
	}
	out := map[int]string{}
	archived(func(a *wire.Event) {
		for _, l := range byID[a.ID] {
			if !wire.SameButStamp(a, l.e) {
				out[l.n] = fmt.Sprintf("event id %s is also used by a different event in the archive (at %s): two events cannot share an id", a.ID, a.At.Format(wire.TimeLayout))
			}
		}
	})
	return out
}

// QuarantineReused takes out of t (a tree as commit from holds it) the
// ledger lines that give an archived event's id to a different event,
// and returns them. Such a line is folded as an event of its own while it
// comes after the snapshot; one stamped before it makes every reader
// bring the files to their normal form, where the two events meet: only
// those lines are looked up, so a tree without them reads no archive.
func QuarantineReused(dir string, t Tree, from, commit string) []Quarantined {
	led, snap := t[LedgerFile], t[SnapshotFile]
	if _, named := t[SnapshotFile]; named && snap == nil {
		snap, _ = os.ReadFile(filepath.Join(dir, SnapshotFile)) // the same bytes here (see Tree)
	}
	i := bytes.IndexByte(snap, '\n')
	if len(led) == 0 || i < 0 {
		return nil
	}
	body, err := wire.CheckFrame(snap[:i+1])
	if err != nil {
		return nil
	}
	hdr, err := wire.ReadHeader(body)
	if err != nil || hdr.LastID == "" {
		return nil
	}
	last := &wire.Event{At: hdr.LastAt, ID: hdr.LastID}
	stale := false
	for rest := led; len(rest) > 0 && !stale; {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l = rest[:i+1]
		}
		rest = rest[len(l):]
		e, err := wire.DecodeLine(l)
		stale = err == nil && !last.Before(e)
	}
	if !stale {
		return nil
	}
	arch := Tree{}
	for _, n := range t.Archives() {
		arch[n] = t[n]
		if arch[n] == nil {
			if arch[n], err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(n))); err != nil {
				return nil
			}
		}
	}
	reject := reusedIDs(led, func(fn func(*wire.Event)) {
		for _, n := range arch.Archives() {
			evs, _ := DecodeAll(n, arch[n])
			for _, e := range evs {
				fn(e)
			}
		}
	})
	if len(reject) == 0 {
		return nil
	}
	kept, bad := quarantineLines(led, from, commit, LedgerFile, reject)
	t[LedgerFile] = kept
	return bad
}

// A snapshot is a cache of the events it folds, and anyone with push
// access can commit one: bl sync --pull holds a fetched snapshot to those
// events (SettleSnapshot). A snapshot git itself wrote — a plain pull,
// merge, checkout — is held to them the same way the first time a handle
// reads it without its index (vetSnapshot): one that does not read, or
// that no history produces, is rebuilt from the events and named as a
// quarantined line is. The sum of the last snapshot checked, or written
// by this clone's compaction, is kept in the cache, so the same bytes are
// not checked again; a snapshot git does not track is not checked at all.

// vettedFile holds the sha256 of the last snapshot checked against its
// events.
const vettedFile = CacheDir + "/snapshot.vetted"

// errSnapshotRebuilt: vetSnapshot replaced the snapshot; load again.
var errSnapshotRebuilt = errors.New("snapshot rebuilt from its events")

// vetSnapshot checks the snapshot at path (open as f) when git tracks it
// and it was not checked before; see above. It returns errSnapshotRebuilt
// after replacing it. The caller holds b.mu.
func (b *Store) vetSnapshot(path string, f *os.File) error {
	root, err := gitdir.Root(b.dir)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return nil
	}
	// Tracked, it may be git's, whatever its bytes: attributes a push can
	// set (eol, ident, working-tree-encoding, a filter such as git-lfs)
	// make the file git writes differ from the blob its index names.
	if _, ok := gitdir.StagedFile(root, filepath.ToSlash(rel)); !ok {
		return nil // nothing git knows: this clone's own
	}
	// A checkout that brought a new snapshot may have brought local files
	// a teammate force-added too: name them (once).
	b.NoteTrackedLocal()
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return err
	}
	// Line ends git converted (eol=crlf) are not the snapshot's: it is
	// checked, and kept, as bl writes it.
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	sum := sha256.Sum256(data)
	if vetted, _ := os.ReadFile(filepath.Join(b.dir, vettedFile)); string(vetted) == hex.EncodeToString(sum[:]) && !tracked(root, filepath.Join(b.dir, vettedFile)) {
		return nil
	}
	// Without the lock it is still checked (only a rebuild needs the
	// lock): read unchecked, it would be indexed, and an indexed snapshot
	// is never checked again.
	var lockErr error
	if !b.holding {
		if lockErr = b.lk.Acquire(context.Background(), b.opts.LockTimeout); lockErr == nil {
			defer b.lk.Release()
		}
	}
	t := Tree{SnapshotFile: data}
	names, err := ArchiveNames(b.dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		// A segment git wrote is given, as a fetched one is: its damage
		// must not vouch for the snapshot either. One that is not the
		// bytes git holds is this clone's own: left to be read from dir.
		path := filepath.Join(b.dir, filepath.FromSlash(n))
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		t[n] = nil
		if staged, ok := gitdir.StagedFile(root, filepath.ToSlash(rel)); ok && staged.Size == int64(len(data)) && staged.Matches(data) {
			t[n] = data
		}
	}
	if t[LedgerFile], err = os.ReadFile(filepath.Join(b.dir, LedgerFile)); err != nil {
		return err
	}
	q, err := SettleSnapshot(b.dir, t, nil, FromGit, gitdir.Head(root))
	if err != nil || len(q) == 0 {
		return err
	}
	if lockErr != nil {
		return fmt.Errorf("%s, which git wrote, is not what its events fold (%s); the next command that takes the lock rebuilds it: %w", SnapshotFile, q[0].Reason, lockErr)
	}
	if err := fsutil.ReplaceFile(path, t[SnapshotFile], nil); err != nil {
		return err
	}
	fresh, err := RecordQuarantine(b.dir, q)
	for _, x := range fresh {
		b.warn(QuarantineMessage(x))
	}
	if err != nil {
		return err
	}
	return errSnapshotRebuilt
}

// tracked reports whether git's index holds the file at path: a file of
// the cache that git tracks came with a push (git overwrites an ignored
// file when it checks out one that a teammate force-added), so it
// vouches for nothing.
func tracked(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return true
	}
	_, ok := gitdir.StagedFile(root, filepath.ToSlash(rel))
	return ok
}

// recordVetted notes data as the last snapshot checked against its events.
func recordVetted(dir string, data []byte) {
	sum := sha256.Sum256(data)
	recordVettedSum(dir, sum[:])
}

// recordVettedSum is recordVetted given the snapshot's sha256.
func recordVettedSum(dir string, sum []byte) {
	path := filepath.Join(dir, vettedFile)
	if !TrustLocal(dir, vettedFile) || CheckLocalPath(dir, vettedFile) != nil {
		return // a teammate's: left alone, and never believed (vetSnapshot)
	}
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = fsutil.ReplaceFile(path, []byte(hex.EncodeToString(sum)), nil) // a cache: lost, it is checked again
	}
}
