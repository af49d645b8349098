package store

// How a handle reads the files: the snapshot and the ledger after it
// (loadOnce), what it does when they disagree (loadStale, loadNormalForm;
// see "Snapshot and compaction" in doc.go), and catching up with what
// other writers appended since (catchUp).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// reload loads the snapshot and folds the whole ledger after it. A
// compaction can replace both files while this runs; it renames the
// snapshot first, so a snapshot that changed while the ledger was read
// means the pair may not match, and the load starts over.
func (b *Store) reload() error {
	if pendingJournal(b.dir) && !b.holding {
		// A multi-file change was decided but not finished: finish it
		// under the lock before reading anything. A reader that cannot
		// (a full disk, a read-only directory) reads what is there: the
		// files of a change half made fold, in their normal form, to the
		// same state (see loadNormalForm).
		if err := b.lk.Acquire(context.Background(), b.opts.LockTimeout); err == nil {
			err = RollForward(b.dir)
			b.lk.Release()
			if err != nil {
				b.warn(fmt.Sprintf("could not finish the change journaled in %s (%v); reading the files as they are", filepath.Join(b.dir, StagingDir), err))
			}
		}
	}
	sorted := false // fold the ledger sorted (readSorted): its lines are out of order
	for attempt := 0; ; attempt++ {
		done, err := b.loadOnce(sorted)
		if errors.Is(err, errUnsorted) && !sorted {
			sorted, done, err = true, false, nil
		}
		if err != nil && b.setAsideFromGit(err) {
			done, err = false, nil // the ledger git wrote, less its damaged lines
		}
		if err != nil || done {
			return err
		}
		if attempt == 100 {
			return fmt.Errorf("ledger: %s keeps changing while loading; is a compaction looping?", b.dir)
		}
	}
}

// catchUp folds whatever was appended since the last read. A replaced file
// (compaction, merge) is folded again from the start.
func (b *Store) catchUp() error {
	if b.stale {
		// Nothing reads a stale state again: let it go before the reload
		// folds the files beside it (after an import's check it holds
		// every card the import makes).
		b.state.Release()
		b.state = fold.NewState()
	}
	if b.stale || b.snapshotMoved() {
		return b.reload()
	}
	fold, failed := foldInto(b.state)
	pos, torn, err := readFrom(filepath.Join(b.dir, LedgerFile), b.pos, fold)
	if errors.Is(err, errReplaced) {
		return b.reload()
	}
	if errors.Is(err, ErrStale) || errors.Is(err, errUnsorted) {
		return b.reload()
	}
	if ferr := failed(); ferr != nil {
		// The fold stopped at an event it could not check: the state is
		// no longer the fold of the file. Load it again on the next call.
		b.stale = true
		return ferr
	}
	// pos covers exactly the events applied, even when reading stopped at
	// damage, so the next catch-up neither skips nor repeats one.
	b.pos, b.torn = pos, torn
	if err != nil && b.setAsideFromGit(err) {
		return b.reload()
	}
	return err
}

// foldInto returns the function that folds ledger events into s, and one
// that reports the first event it could not fold because a snapshot line
// it needed does not read; after that it folds nothing more.
func foldInto(s *fold.State) (fold func(*wire.Event), failed func() error) {
	var ferr error
	fold = func(e *wire.Event) {
		if ferr != nil {
			return
		}
		_, ferr = s.FoldEvent(e) // a conflict is recorded in s
	}
	return fold, func() error { return ferr }
}

// snapshotMoved reports whether snapshot.json is no longer the file the
// state was loaded from: a sync or a git pull can replace it and leave an
// unchanged ledger alone. Size and mtime are compared too, as a closed
// file's inode number may be reused at once.
func (b *Store) snapshotMoved() bool {
	fi, err := os.Stat(filepath.Join(b.dir, SnapshotFile))
	if b.snapInfo == nil {
		return err == nil
	}
	return err != nil || !os.SameFile(fi, b.snapInfo) || fi.Size() != b.snapInfo.Size() || !fi.ModTime().Equal(b.snapInfo.ModTime())
}

// catchUpForWrite catches up under the lock, where no append can be in
// progress, and settles the end of the ledger (settleTail).
func (b *Store) catchUpForWrite() error {
	// Finish a decided multi-file change, or drop an undecided one.
	if err := RollForward(b.dir); err != nil {
		return err
	}
	if b.normalForm {
		b.stale = true // under the lock: try to rewrite the files (loadOnce)
	}
	if err := b.catchUp(); err != nil {
		return err
	}
	return b.settleTail()
}

// refresh brings the state up to date for a read.
func (b *Store) refresh() error {
	return b.catchUp()
}

// loadOnce loads the snapshot and the ledger after it. done is false when
// the pair changed underneath (a compaction or normalization ran) and the
// load must start over.
func (b *Store) loadOnce(sorted bool) (done bool, err error) {
	s, hdr, snapFile, err := openSnapshotIndexed(b.dir, b.vetSnapshot)
	if errors.Is(err, ErrStale) { // a union of two snapshots
		return b.loadStale()
	}
	if errors.Is(err, errSnapshotRebuilt) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var info os.FileInfo
	if snapFile != nil {
		if s.Source() == nil {
			defer snapFile.Close()
		}
		if info, err = snapFile.Stat(); err != nil {
			s.Release()
			return false, err
		}
	}
	snapEvents := s.Events()
	snapshotChanged := func() bool {
		now, serr := os.Stat(filepath.Join(b.dir, SnapshotFile))
		return !((info == nil && errors.Is(serr, os.ErrNotExist)) || (info != nil && serr == nil && os.SameFile(info, now)))
	}
	pos, err := SnapshotPosition(b.dir, s, hdr)
	ckptLines := 0 // the ledger lines the tail checkpoint folded
	if err == nil && !sorted && useCheckpoint(b.dir, snapFile, info, hdr, s, &pos) {
		ckptLines = pos.lines
	}
	var torn *wire.TornTail
	if err == nil {
		fold, failed := foldInto(s)
		read := readFrom
		if sorted {
			read = readSorted
		}
		pos, torn, err = read(filepath.Join(b.dir, LedgerFile), pos, fold)
		if ferr := failed(); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil || snapshotChanged() {
		pos.close()
		s.Release()
	}
	switch {
	case snapshotChanged():
		// A compaction ran meanwhile; what looked stale or replaced may
		// just be its new files. Load again.
		return false, nil
	case errors.Is(err, ErrStale):
		return b.loadStale()
	case errors.Is(err, errReplaced):
		return false, nil
	case err != nil:
		return false, err
	}
	b.pos.close()
	b.state.Release()
	b.state, b.seq, b.pos, b.torn, b.snapEvents = s, hdr.Seq, pos, torn, snapEvents
	b.stale, b.normalForm = false, false
	b.snapInfo, b.ckptLines = info, ckptLines
	return true, nil
}

// loadStale loads a backlog whose files disagree. A writer rewrites the
// files into their normal form and loads them again. When it cannot (a
// full disk), it goes on from the normal form in memory, as a reader does.
func (b *Store) loadStale() (done bool, err error) {
	if b.holding {
		torn, lost, nerr := Normalize(b.dir)
		if torn != nil {
			b.warn(setAsideMessage(b.dir, torn))
		}
		if lost != nil {
			b.warn(lost.String())
		}
		if nerr == nil {
			return false, nil
		}
		b.warn(fmt.Sprintf("could not rewrite %s into its normal form (%v); working from memory", b.dir, nerr))
	}
	return b.loadNormalForm()
}

// SnapshotPosition is where folding the ledger starts after the snapshot:
// after the ledger prefix a compaction cut short left (recognised by
// length and checksum), with the snapshot's newest event as the one every
// ledger event must come after. An archive set other than the one the
// snapshot folded is errStale, unless the only difference is the segment
// a compaction that did not finish left behind (LeftoverSegment).
//
// The ledger is opened once, here, and the Position keeps it (the caller
// closes it): the prefix is measured in the very file that is then read
// from that offset. A compaction can replace the ledger between two opens
// of the path, and an offset into the old file is the middle of a line in
// the new one.
func SnapshotPosition(dir string, s *fold.State, hdr wire.SnapshotHeader) (Position, error) {
	var pos Position
	if last := s.Last(); last.ID != "" {
		pos.last, pos.snap = &last, &last
	}
	path := filepath.Join(dir, LedgerFile)
	f, err := fsutil.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return pos, wire.Errorf(wire.ErrNotInitialized, "%s is missing", path)
		}
		return pos, err
	}
	pos.file = f // pos.info stays nil until readFrom reads it: this file, whatever the path names by then
	covered, lines, err := CoveredPrefix(f, hdr)
	if err != nil {
		pos.close()
		return pos, err
	}
	pos.offset, pos.base, pos.lines, pos.coveredLines = covered, covered, lines, lines
	if pos.sum, pos.summed = prefixChecksum(f, covered); covered == 0 {
		pos.sum, pos.summed = 0, true
	}
	names, err := ArchiveNames(dir)
	if err != nil {
		pos.close()
		return pos, err
	}
	if !NamesMatch(names, hdr) && LeftoverSegment(dir, f, names, hdr, covered) == "" {
		pos.close()
		return pos, ErrStale
	}
	return pos, nil
}

// NamesMatch reports whether names are the archive segments the snapshot
// with this header folded.
func NamesMatch(names []string, hdr wire.SnapshotHeader) bool {
	if hdr.V == 0 { // no snapshot
		return len(names) == 0
	}
	return archiveFingerprint(names) == hdr.Archives
}

// CoveredPrefix is the length and line count of the prefix of the ledger
// open in f that the snapshot already folded: what a compaction that wrote
// its snapshot but could not empty the ledger left. Zero when the ledger
// does not start with exactly those bytes.
func CoveredPrefix(f *os.File, hdr wire.SnapshotHeader) (int64, int, error) {
	if hdr.TailBytes <= 0 {
		return 0, 0, nil
	}
	// Only a ledger at least that long can start with the prefix; check
	// before reading it, as it can be hundreds of MB.
	if fi, err := f.Stat(); err != nil || fi.Size() < hdr.TailBytes {
		return 0, 0, err
	}
	prefix := make([]byte, hdr.TailBytes)
	if n, _ := f.ReadAt(prefix, 0); int64(n) == hdr.TailBytes && wire.CrcHex(prefix) == hdr.TailCRC {
		return hdr.TailBytes, bytes.Count(prefix, []byte{'\n'}), nil
	}
	return 0, 0, nil
}

// LeftoverSegment returns the archive segment a compaction that did not
// finish wrote before its snapshot: the one name the snapshot does not
// fold, whose bytes are exactly those of the ledger open in led after the
// covered prefix. Every event in it is still in the ledger, so a load
// ignores it and the next compaction removes it. "" when names hold no
// such segment.
func LeftoverSegment(dir string, led io.ReaderAt, names []string, hdr wire.SnapshotHeader, covered int64) string {
	for i, name := range names {
		if !NamesMatch(slices.Delete(slices.Clone(names), i, i+1), hdr) {
			continue
		}
		seg, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || len(seg) == 0 {
			return ""
		}
		got := make([]byte, len(seg))
		if n, _ := led.ReadAt(got, covered); n == len(seg) && bytes.Equal(got, seg) {
			return name
		}
		return ""
	}
	return ""
}

// loadNormalForm loads a backlog whose files disagree (a git merge brought
// in archive segments or ledger lines from elsewhere) as the fold of its
// normal form (NormalTree), computed in memory: the state the next writer
// that rewrites the files will see. Nothing is written. done is false when
// a compaction or a normalization changed the files meanwhile.
func (b *Store) loadNormalForm() (done bool, err error) {
	snapPath, path := filepath.Join(b.dir, SnapshotFile), filepath.Join(b.dir, LedgerFile)
	snapInfo, serr := os.Stat(snapPath)
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, info.Size()), data); err != nil {
		return false, err
	}
	t, err := ReadTree(b.dir)
	if err != nil {
		return false, err
	}
	led, end, torn, err := wire.ReadEventsData(path, data)
	if err != nil {
		return false, err
	}
	// A final event without its line end counts as a line; a writer
	// restores the newline before appending (Position.bare).
	lines := bytes.Count(data[:end], []byte{'\n'})
	bare := end > 0 && data[end-1] != '\n'
	if bare {
		lines++
	}
	t[LedgerFile] = data[:end]
	norm, lost, err := NormalTree(t, led)
	if err != nil {
		return false, err
	}
	if lost != nil {
		b.warn(lost.String())
	}
	s, err := norm.fold(false)
	if err != nil {
		return false, err
	}
	if now, err := os.Stat(snapPath); (serr == nil) != (err == nil) || (serr == nil && !os.SameFile(snapInfo, now)) {
		return false, nil // a compaction ran meanwhile
	}
	var last *wire.Event
	if l := s.Last(); l.ID != "" {
		last = &l
	}
	keep = true
	b.pos.close()
	b.state.Release()
	b.state, b.torn, b.stale, b.normalForm = s, torn, false, true
	b.pos = Position{file: f, info: info, offset: end, lines: lines, last: last, bare: bare}
	b.seq = len(norm.Archives())
	b.snapEvents = s.Events() - int64(bytes.Count(norm[LedgerFile], []byte{'\n'}))
	b.snapInfo = nil
	if serr == nil {
		b.snapInfo = snapInfo
	}
	return true, nil
}
