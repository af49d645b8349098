package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// CheckpointEvery is how many ledger lines past the last checkpoint (or
// the snapshot) a writer lets a load fold before it writes a new one: a
// checkpoint costs about what folding that many lines does, once. A
// variable for the tests.
var CheckpointEvery = 64

// CheckpointMaxCards bounds the cards a checkpoint holds: a handle that
// has read most of the snapshot (a list, then a write) writes none.
const CheckpointMaxCards = 20_000

// maybeCheckpoint writes the tail checkpoint when the lines folded past
// the last one reach CheckpointEvery. Called under the writers' lock after
// an append; a failure only costs the next loads their speed.
func (b *Store) maybeCheckpoint() {
	if b.pos.lines-max(b.ckptLines, b.pos.coveredLines) < CheckpointEvery {
		return
	}
	b.ckptLines = b.pos.lines // once per CheckpointEvery lines, written or not
	if b.stale || b.normalForm || b.snapInfo == nil {
		return
	}
	if err := writeCheckpoint(b.dir, b.snapInfo, b.state, &b.pos); errors.Is(err, errFoldedBytesChanged) {
		b.stale = true // the next call folds the files as they are
	}
}

// writeCheckpoint writes the checkpoint of s, the fold of the snapshot
// stat'ed as snapInfo and of the ledger up to pos, held under the lock.
func writeCheckpoint(dir string, snapInfo os.FileInfo, s *fold.State, pos *Position) error {
	if pos.file == nil || pos.unsorted || pos.bare || pos.offset <= pos.base || s.Source() == nil {
		return errNoCheckpoint
	}
	snap, err := os.Open(filepath.Join(dir, SnapshotFile))
	if err != nil {
		return err
	}
	defer snap.Close()
	fi, err := snap.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(fi, snapInfo) || fi.Size() != snapInfo.Size() || !fi.ModTime().Equal(snapInfo.ModTime()) || changeTime(fi) != changeTime(snapInfo) {
		return errNoCheckpoint // not the snapshot s was folded from
	}
	ledInfo, err := pos.file.Stat()
	if err != nil {
		return err
	}
	id, hdr, ok := identify(snap, fi, ledInfo)
	if !ok || s.NumConflicts() < hdr.Conflicts || s.Events() < hdr.Events {
		return errNoCheckpoint
	}
	// The checkpoint names the bytes s was folded from; the file must
	// still hold them (an editor may rewrite a line in place, keeping the
	// inode and the size).
	if !pos.summed {
		return errNoCheckpoint
	}
	prefixSum := pos.sum
	if now, ok := prefixChecksum(pos.file, pos.offset); !ok || now != prefixSum {
		return errFoldedBytesChanged
	}
	cards, receipts, conflicts := overlay(s, hdr)
	if len(cards) > CheckpointMaxCards {
		return errNoCheckpoint
	}
	ids := make([]uint64, 0, len(pos.ids))
	for h := range pos.ids {
		ids = append(ids, h)
	}
	slices.Sort(ids)
	body := make([]byte, 8*len(ids), 8*len(ids)+(len(cards)+1)*(cardKeyLen+512))
	for i, h := range ids {
		binary.LittleEndian.PutUint64(body[8*i:], h)
	}
	for _, c := range cards {
		if body, ok = appendCardKey(body, c); !ok {
			return errNoCheckpoint
		}
	}
	last := s.Last()
	if body, err = wire.AppendFramed(body, &last); err != nil {
		return err
	}
	for _, c := range cards {
		if body, err = wire.AppendFramed(body, wire.SnapshotLine{Card: c}); err != nil {
			return err
		}
	}
	for i := range receipts {
		if body, err = wire.AppendFramed(body, wire.SnapshotLine{Receipt: &receipts[i]}); err != nil {
			return err
		}
	}
	for i := range conflicts {
		if body, err = wire.AppendFramed(body, wire.SnapshotLine{Conflict: &conflicts[i]}); err != nil {
			return err
		}
	}
	f := [ckFields]uint64{ckFormat: wire.FormatVersion,
		ckSnapDev: id.snapDev, ckSnapIno: id.snapIno, ckSnapSize: id.snapSize, ckSnapMtime: id.snapMtime, ckSnapCtime: id.snapCtime, ckSnapHeaderCRC: id.snapHeaderCRC,
		ckLedgerDev: id.ledgerDev, ckLedgerIno: id.ledgerIno,
		ckOffset: uint64(pos.offset), ckLines: uint64(pos.lines), ckBase: uint64(pos.base), ckPrefixCRC: uint64(prefixSum),
		ckEvents: uint64(s.Events()), ckCreated: uint64(s.Created()), ckIDs: uint64(len(ids)), ckCards: uint64(len(cards)),
		ckBodyLen: uint64(len(body)), ckBodyCRC: uint64(checkpointSum(0, body)),
	}
	out := make([]byte, checkpointHeaderLen, checkpointHeaderLen+len(body))
	copy(out, checkpointMagic[:])
	for i, v := range f {
		binary.LittleEndian.PutUint64(out[8+8*i:], v)
	}
	binary.LittleEndian.PutUint64(out[8+8*ckHeaderCRC:], uint64(checkpointSum(0, out[:checkpointHeaderLen-8])))
	out = append(out, body...)
	// Not through a link on the way (see CheckLocalPath), nor the tidying
	// of temp files below.
	if err := CheckLocalPath(dir, CacheDir+"/"+CheckpointFile); err != nil {
		return err
	}
	cache := filepath.Join(dir, CacheDir)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	// Only a writer under the lock writes a checkpoint: a temp file left
	// beside it is from one killed mid-write.
	if left, _ := filepath.Glob(filepath.Join(cache, "."+CheckpointFile+".tmp-*")); len(left) > 0 {
		for _, name := range left {
			_ = os.Remove(name)
		}
	}
	return ReplaceAtomic(filepath.Join(cache, CheckpointFile), out, nil)
}

// errFoldedBytesChanged: the ledger's bytes before the handle's position
// are no longer those it folded; its state is stale.
var errFoldedBytesChanged = errors.New("the ledger changed under the handle")

// overlay is what s holds beyond the snapshot with header hdr: every card
// and receipt in memory (those the ledger changed, and any read), and the
// conflicts the ledger added, in fold order.
func overlay(s *fold.State, hdr wire.SnapshotHeader) (cards []*wire.Card, receipts []wire.Keyed, conflicts []wire.Conflict) {
	s.Range(func(c *wire.Card) bool {
		cards = append(cards, c)
		return true
	})
	slices.SortFunc(cards, func(a, b *wire.Card) int { return strings.Compare(a.ID, b.ID) })
	s.RangeReceipts(func(rid string, r wire.Receipt) bool {
		receipts = append(receipts, wire.Keyed{RequestID: rid, Receipt: r})
		return true
	})
	slices.SortFunc(receipts, func(a, b wire.Keyed) int { return strings.Compare(a.RequestID, b.RequestID) })
	return cards, receipts, s.Conflicts()[hdr.Conflicts:]
}

type checkpointError string

func (e checkpointError) Error() string { return string(e) }

// errNoCheckpoint: the state is not one a checkpoint can describe.
const errNoCheckpoint = checkpointError("no tail checkpoint for this state")
