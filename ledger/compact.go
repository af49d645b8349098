package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
// keeping the folded events in archive/<cursor>.jsonl (named after the
// newest event in it) so history stays readable (bl log). It holds the lock throughout: writers wait, readers
// keep reading (see reload). Each step is atomic and ordered so that a
// crash at any point loses nothing:
//
//  1. archive/<cursor>.jsonl ← the ledger's events (temp, fsync, rename, fsync
//     dir). A crash after this leaves an archive the next compaction
//     rewrites; the ledger still holds everything.
//  2. snapshot.json ← the fold (same). A crash after this leaves a
//     snapshot and a ledger that both hold the newest events; loading
//     skips the ledger lines the snapshot covers, by (at, id).
//  3. ledger.jsonl ← an empty file (same). Readers holding the old file
//     notice the replacement and reload.
func (b *Backlog) Compact(ctx context.Context) (res CompactResult, err error) {
	err = b.withLock(ctx, func() error {
		res, err = b.compactLocked()
		return err
	})
	return res, err
}

// compactLocked runs a compaction; the caller holds the lock and is caught
// up with the ledger.
func (b *Backlog) compactLocked() (CompactResult, error) {
	res := CompactResult{Seq: b.seq, Cards: b.state.Len()}
	if b.pos.offset == 0 {
		return res, nil
	}
	ledgerPath := filepath.Join(b.dir, LedgerFile)
	if b.pos.offset > b.pos.base { // events not yet in any snapshot
		removeTemps(b.dir)
		segment := make([]byte, b.pos.offset-b.pos.base)
		f, err := os.Open(ledgerPath)
		if err != nil {
			return res, err
		}
		_, err = f.ReadAt(segment, b.pos.base)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return res, fmt.Errorf("compact: read %s: %w", ledgerPath, err)
		}
		name := archiveName(b.state.Last())
		archive := filepath.Join(b.dir, name)
		if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
			return res, err
		}
		if err := replaceFile(archive, segment, nil); err != nil {
			return res, fmt.Errorf("compact: write %s: %w", archive, err)
		}
		if err := syncDir(b.dir); err != nil { // the archive directory entry itself
			return res, err
		}
		b.failpoint("compact-after-archive")
		names, err := archiveNames(b.dir)
		if err != nil {
			return res, err
		}
		seq := len(names) // segments folded, this one included
		snap, ib, err := b.state.encodeSnapshot(names, segment)
		if err != nil {
			return res, fmt.Errorf("compact: encode snapshot: %w", err)
		}
		if err := replaceFile(filepath.Join(b.dir, SnapshotFile), snap, func() { b.failpoint("compact-mid-snapshot") }); err != nil {
			return res, fmt.Errorf("compact: write snapshot: %w", err)
		}
		b.failpoint("compact-after-snapshot")
		writeIndexFor(b.dir, snap, ib)
		b.seq = seq
		b.snapEvents = b.state.Events()
		b.snapBytes = int64(len(snap))
		if fi, err := os.Stat(filepath.Join(b.dir, SnapshotFile)); err == nil {
			b.snapInfo = fi // ours: the next catch-up need not reload
		}
		res = CompactResult{Seq: seq, Events: b.pos.lines - b.pos.coveredLines, LedgerBytes: int64(len(segment)),
			Archive: name, Cards: b.state.Len(), SnapshotBytes: int64(len(snap))}
	}
	if err := replaceFile(ledgerPath, nil, nil); err != nil {
		return res, fmt.Errorf("compact: start a fresh ledger: %w", err)
	}
	b.failpoint("compact-after-truncate")
	// Hold the fresh ledger open at once, so its identity is ours to
	// compare even if other compactions free and reuse inode numbers.
	f, err := os.Open(ledgerPath)
	if err != nil {
		return res, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return res, err
	}
	last := b.state.Last()
	b.pos.close()
	b.pos = position{file: f, info: info, last: &last}
	return res, nil
}

// writeIndexFor caches the index of the snapshot just written, so the next
// load reads only the lines it needs. It is only a cache: on failure the
// next load rebuilds it.
func writeIndexFor(dir string, snap []byte, ib *indexBuild) {
	fi, err := os.Stat(filepath.Join(dir, SnapshotFile))
	if err != nil || fi.Size() != int64(len(snap)) {
		return
	}
	header := snap[:bytes.IndexByte(snap, '\n')+1]
	_ = writeIndex(dir, snapshotIdentity(fi, header), ib)
}

// CompactThreshold is the ledger size at which a write compacts, or 0 when
// automatic compaction is off.
func (b *Backlog) CompactThreshold() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg.compactThreshold(b.snapBytes)
}

// maybeCompact compacts when the ledger has outgrown the configured size.
// The write that triggered it is already durable, so a failure here is kept
// for Stats rather than failing that write; the next write tries again.
func (b *Backlog) maybeCompact() {
	limit := b.cfg.compactThreshold(b.snapBytes)
	if limit == 0 || b.pos.offset-b.pos.base < limit {
		return
	}
	if _, err := b.compactLocked(); err != nil {
		b.compactErr = err
		return
	}
	b.compactErr = nil
}

// removeTemps deletes temp files left by a compaction or repair that was
// killed before its rename. Only the lock holder calls it.
func removeTemps(dir string) {
	for _, d := range []string{dir, filepath.Join(dir, ArchiveDir), filepath.Join(dir, CacheDir)} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
				os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
}
