package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// CompactResult says what a compaction did.
type CompactResult struct {
	Seq           int    `json:"seq"`            // archive segments folded, this one included
	Events        int    `json:"events"`         // events moved from the ledger into the archive
	LedgerBytes   int64  `json:"ledger_bytes"`   // bytes they took in ledger.jsonl
	Archive       string `json:"archive"`        // the segment they went to, relative to the backlog
	Cards         int    `json:"cards"`          // cards in the snapshot
	SnapshotBytes int64  `json:"snapshot_bytes"` // size of snapshot.json
}

// Compact folds the ledger into snapshot.json and starts a fresh ledger,
// keeping the folded events in archive/<cursor>.jsonl so history stays
// readable (bl log). It holds the lock throughout. Its steps, and why a
// crash or a full disk at any of them loses nothing, are in the package
// documentation ("Snapshot and compaction").
func (b *Store) Compact(ctx context.Context) (res CompactResult, err error) {
	err = b.withLock(ctx, func() error {
		res, err = b.compactLocked()
		return err
	})
	if errors.Is(err, syscall.ENOSPC) {
		err = fmt.Errorf("%w; no event was lost and the backlog reads and writes as before: free some space, then run bl compact again", err)
	}
	return res, err
}

// ReplaceAtomic is how compaction, the snapshot index and journaled tree
// changes replace a file (replaceFile). Tests swap it to make one step
// fail as a full disk does.
var ReplaceAtomic = fsutil.ReplaceFile

// ReplaceStream is how compaction replaces the files it streams (the
// archive segment, the snapshot); tests swap it with replaceAtomic.
var ReplaceStream = fsutil.ReplaceFileFrom

// compactLocked runs a compaction; the caller holds the lock and is caught
// up with the ledger. On failure the state and the files read as before.
func (b *Store) compactLocked() (res CompactResult, err error) {
	written := "" // the archive segment this compaction wrote
	defer func() {
		if err != nil && written != "" {
			dropUnnamed(b.dir, written)
		}
	}()
	res = CompactResult{Seq: b.seq, Cards: b.state.Len()}
	if b.pos.offset == 0 {
		return res, nil
	}
	ledgerPath := filepath.Join(b.dir, LedgerFile)
	// What a compaction that failed or was killed left behind.
	RemoveTemps(b.dir)
	if err := removeLeftover(b.dir); err != nil {
		return res, fmt.Errorf("compact: remove the archive segment an earlier compaction left: %w", err)
	}
	if b.pos.offset > b.pos.base { // events not yet in any snapshot
		// The whole prefix the snapshot will cover, by length and CRC: a
		// ledger that still starts with it after a failed step 3 is
		// skipped up to there. It is streamed, as the segment and the
		// snapshot are: a ledger of 100,000 imported issues is too large
		// to hold (see compactStream).
		f, err := os.Open(ledgerPath)
		if err != nil {
			return res, err
		}
		defer f.Close()
		tailCRC, err := crcOf(io.NewSectionReader(f, 0, b.pos.offset), b.pos.offset)
		if err != nil {
			return res, fmt.Errorf("compact: read %s: %w", ledgerPath, err)
		}
		writeSegment, segmentBytes, err := b.segment(f, ledgerPath)
		if err != nil {
			return res, err
		}
		name := ArchiveName(b.state.Last())
		// From here until the snapshot names it, the segment is a
		// leftover: a failure removes it again.
		written = name
		if err := writeArchive(b.dir, name, writeSegment); err != nil {
			return res, err
		}
		b.failpoint("compact-after-archive")
		names, err := ArchiveNames(b.dir)
		if err != nil {
			return res, err
		}
		snap, err := b.writeSnapshot(names, tailCRC)
		if err != nil {
			return res, err
		}
		res = CompactResult{Seq: b.seq, Events: b.pos.lines - b.pos.coveredLines, LedgerBytes: segmentBytes,
			Archive: name, Cards: b.state.Len(), SnapshotBytes: snap.size}
		// The snapshot covers the ledger so far, whether or not step 3
		// succeeds.
		b.pos.base, b.pos.coveredLines = b.pos.offset, b.pos.lines
	}
	return res, b.freshLedger(ledgerPath)
}

// writeSnapshot writes the snapshot of the state so far over the archive
// segments names and the ledger's first b.pos.offset bytes (their CRC
// tailCRC), then its index, and takes it as this handle's own.
func (b *Store) writeSnapshot(names []string, tailCRC string) (snap snapshotWritten, err error) {
	snapSum := sha256.New()
	if err := ReplaceStream(filepath.Join(b.dir, SnapshotFile), func(w io.Writer) (err error) {
		snapSum.Reset()
		snap, err = encodeSnapshotTo(io.MultiWriter(w, snapSum), b.state, names, b.pos.offset, tailCRC, func() { b.failpoint("compact-mid-snapshot") })
		return err
	}); err != nil {
		return snap, fmt.Errorf("compact: write snapshot: %w", err)
	}
	b.failpoint("compact-after-snapshot")
	writeIndexFor(b.dir, snap)
	recordVettedSum(b.dir, snapSum.Sum(nil)) // folded here: git writing it back is not news
	RecordSeen(b.dir, b.state.Events(), b.state.Last())
	b.seq = len(names) // segments folded, the new one included
	b.snapEvents = b.state.Events()
	if fi, err := os.Stat(filepath.Join(b.dir, SnapshotFile)); err == nil {
		b.snapInfo = fi // ours: the next catch-up need not reload
	}
	return snap, nil
}

// segment is the writer of the archive segment: the ledger's events not
// yet in any snapshot, read from f, and its size.
func (b *Store) segment(f *os.File, ledgerPath string) (write func(io.Writer) error, size int64, err error) {
	segment := io.NewSectionReader(f, b.pos.base, b.pos.offset-b.pos.base)
	if !b.pos.unsorted {
		return func(w io.Writer) error { _, err := io.Copy(w, segment); return err }, segment.Size(), nil
	}
	// A git union merge left the lines out of order or repeated: the
	// segment holds them sorted, each once.
	data := make([]byte, segment.Size())
	if _, err := segment.ReadAt(data, 0); err != nil {
		return nil, 0, fmt.Errorf("compact: read %s: %w", ledgerPath, err)
	}
	if data, err = SettleData(ledgerPath, data); err != nil {
		return nil, 0, fmt.Errorf("compact: %w", err)
	}
	return func(w io.Writer) error { _, err := w.Write(data); return err }, int64(len(data)), nil
}

// writeArchive writes the archive segment name durably, its directory
// entry included.
func writeArchive(dir, name string, write func(io.Writer) error) error {
	archive := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if err := ReplaceStream(archive, write); err != nil {
		return fmt.Errorf("compact: write %s: %w", archive, err)
	}
	if err := fsutil.SyncDir(dir); err != nil { // the archive directory entry itself
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// freshLedger empties the ledger the snapshot now covers and reads on
// from the new file.
func (b *Store) freshLedger(ledgerPath string) error {
	if err := ReplaceAtomic(ledgerPath, nil, nil); err != nil {
		return fmt.Errorf("compact: start a fresh ledger: %w", err)
	}
	b.failpoint("compact-after-truncate")
	// Hold the fresh ledger open at once, so its identity is ours to
	// compare even if other compactions free and reuse inode numbers.
	f, err := os.Open(ledgerPath)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	last := b.state.Last()
	b.pos.close()
	b.pos = Position{file: f, info: info, last: &last}
	b.ckptLines = 0
	_ = os.Remove(filepath.Join(b.dir, CacheDir, CheckpointFile)) // it names the files just replaced
	return nil
}

// writeIndexFor caches the index of the snapshot just written, so the next
// load reads only the lines it needs. It is only a cache: on failure the
// next load rebuilds it.
func writeIndexFor(dir string, snap snapshotWritten) {
	fi, err := os.Stat(filepath.Join(dir, SnapshotFile))
	if err != nil || fi.Size() != snap.size {
		return
	}
	_ = writeIndex(dir, snapshotIdentity(fi, snap.header), snap.ib)
}

// crcOf is the CRC of the n bytes r holds, as wire.CrcHex gives it, read
// a piece at a time.
func crcOf(r io.Reader, n int64) (string, error) {
	h := crc32.New(wire.Castagnoli())
	got, err := io.Copy(h, r)
	if err == nil && got != n {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Sprintf("%08x", h.Sum32()), err
}

// CompactThreshold is the ledger size at which a write compacts, or 0 when
// automatic compaction is off.
func (b *Store) CompactThreshold() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg.compactThreshold(b.snapSize())
}

// snapSize is the size of the snapshot the state started from, 0 when
// there was none.
func (b *Store) snapSize() int64 {
	if b.snapInfo == nil {
		return 0
	}
	return b.snapInfo.Size()
}

// maybeCompact compacts when the ledger has outgrown the configured size.
// The write that triggered it is already durable, so a failure here is kept
// for Stats rather than failing that write; the next write tries again.
func (b *Store) maybeCompact() {
	limit := b.cfg.compactThreshold(b.snapSize())
	if limit == 0 || b.pos.offset-b.pos.base < limit {
		return
	}
	if _, err := b.compactLocked(); err != nil {
		b.compactErr = err
		return
	}
	b.compactErr = nil
}

// removeLeftover removes the archive segment a compaction that failed or
// was killed before writing its snapshot left (see LeftoverSegment). Only
// the lock holder calls it.
func removeLeftover(dir string) error {
	hdr, err := ReadSnapshotHeader(dir)
	if err != nil {
		return nil // a snapshot that does not read fails the compaction anyway
	}
	names, err := ArchiveNames(dir)
	if err != nil || NamesMatch(names, hdr) {
		return err
	}
	led, err := os.Open(filepath.Join(dir, LedgerFile))
	if err != nil {
		return err
	}
	defer led.Close()
	covered, _, err := CoveredPrefix(led, hdr)
	if err != nil {
		return err
	}
	name := LeftoverSegment(dir, led, names, hdr, covered)
	if name == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
		return err
	}
	return fsutil.SyncDir(filepath.Join(dir, ArchiveDir))
}

// dropUnnamed removes the archive segment name, written by a compaction
// that then failed, unless the snapshot on disk folds it (the snapshot was
// renamed into place before the failure). Best effort: a segment that stays
// is recognised as a leftover and removed by the next compaction. Every
// event in it is still in the ledger.
func dropUnnamed(dir, name string) {
	name = filepath.ToSlash(name)
	hdr, err := ReadSnapshotHeader(dir)
	if err != nil {
		return
	}
	names, err := ArchiveNames(dir)
	i := slices.Index(names, name)
	if err != nil || i < 0 || !NamesMatch(slices.Delete(names, i, i+1), hdr) {
		return
	}
	if os.Remove(filepath.Join(dir, filepath.FromSlash(name))) == nil {
		_ = fsutil.SyncDir(filepath.Join(dir, ArchiveDir))
	}
}

// ReadSnapshotHeader reads the header line of dir's snapshot; the zero
// header when there is none.
func ReadSnapshotHeader(dir string) (wire.SnapshotHeader, error) {
	var hdr wire.SnapshotHeader
	f, err := os.Open(filepath.Join(dir, SnapshotFile))
	if errors.Is(err, os.ErrNotExist) {
		return hdr, nil
	}
	if err != nil {
		return hdr, err
	}
	defer f.Close()
	line, err := readFirstLine(f)
	if err != nil {
		return hdr, err
	}
	raw, err := wire.CheckFrame(line)
	if err == nil {
		hdr, err = wire.ReadHeader(raw)
	}
	return hdr, err
}

// RemoveTemps deletes temp files left by a compaction or repair that was
// killed before its rename. Only the lock holder calls it.
func RemoveTemps(dir string) {
	for _, d := range []string{dir, filepath.Join(dir, ArchiveDir), filepath.Join(dir, CacheDir)} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
				os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
}

// ReplaceTree writes out in place of local, the tracked files as they
// are, through the journal, inside a Locked call, and loads them; with
// compact, or a ledger past the threshold, it compacts the result too (a
// failure is kept for Stats, the rebased files stand). It reports whether
// it compacted and the conflicts of the fold of the result.
func (b *Store) ReplaceTree(local, out Tree, compact bool) (compacted bool, conflicts int, err error) {
	if err := writeTree(b.dir, local, out); err != nil {
		return false, 0, err
	}
	if err := b.reload(); err != nil {
		return false, 0, err
	}
	limit := b.cfg.compactThreshold(b.snapSize())
	if b.pos.offset > b.pos.base && (compact || (limit > 0 && b.pos.offset-b.pos.base >= limit)) {
		if _, err := b.compactLocked(); err != nil {
			b.compactErr = err
		} else {
			compacted = true
		}
	}
	return compacted, b.state.NumConflicts(), nil
}
