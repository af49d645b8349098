package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// CheckpointEvery is how many ledger lines past the last checkpoint (or
// the snapshot) a writer lets a load fold before it writes a new one: a
// checkpoint costs about what folding that many lines does, once. A
// variable for the tests.
var CheckpointEvery = 16

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
	snap, err := fsutil.OpenFile(filepath.Join(dir, SnapshotFile), os.O_RDONLY, 0)
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
	cards, receipts, conflicts, ok := overlay(s, hdr)
	if !ok || len(cards) > CheckpointMaxCards {
		return errNoCheckpoint
	}
	ids := make([]uint64, 0, len(pos.ckIDs)+len(pos.ids))
	ids = append(ids, pos.ckIDs...)
	for h := range pos.ids {
		ids = append(ids, h)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids) // a hash met twice (a collision) is kept once
	// The header goes in front of the body once the body is known.
	out := make([]byte, checkpointHeaderLen+8*len(ids), checkpointHeaderLen+8*len(ids)+len(cards)*(cardKeyLen+512))
	for i, h := range ids {
		binary.LittleEndian.PutUint64(out[checkpointHeaderLen+8*i:], h)
	}
	for _, c := range cards {
		if out, ok = appendCardKey(out, c.key); !ok {
			return errNoCheckpoint
		}
	}
	last := s.Last()
	if out, err = wire.AppendFramed(out, &last); err != nil {
		return err
	}
	for _, c := range cards {
		if c.card == nil {
			out = append(append(out, c.line...), '\n')
		} else if out, err = wire.AppendFramed(out, wire.SnapshotLine{Card: c.card}); err != nil {
			return err
		}
	}
	for i := range receipts {
		if out, err = wire.AppendFramed(out, wire.SnapshotLine{Receipt: &receipts[i]}); err != nil {
			return err
		}
	}
	for i := range conflicts {
		if out, err = wire.AppendFramed(out, wire.SnapshotLine{Conflict: &conflicts[i]}); err != nil {
			return err
		}
	}
	body := out[checkpointHeaderLen:]
	f := [ckFields]uint64{ckFormat: wire.FormatVersion,
		ckSnapDev: id.snapDev, ckSnapIno: id.snapIno, ckSnapSize: id.snapSize, ckSnapMtime: id.snapMtime, ckSnapCtime: id.snapCtime, ckSnapHeaderCRC: id.snapHeaderCRC,
		ckLedgerDev: id.ledgerDev, ckLedgerIno: id.ledgerIno,
		ckOffset: uint64(pos.offset), ckLines: uint64(pos.lines), ckBase: uint64(pos.base), ckPrefixCRC: uint64(prefixSum),
		ckEvents: uint64(s.Events()), ckCreated: uint64(s.Created()), ckIDs: uint64(len(ids)), ckCards: uint64(len(cards)),
		ckBodyLen: uint64(len(body)), ckBodyCRC: uint64(checkpointSum(0, body)),
	}
	copy(out, checkpointMagic[:])
	for i, v := range f {
		binary.LittleEndian.PutUint64(out[8+8*i:], v)
	}
	binary.LittleEndian.PutUint64(out[8+8*ckHeaderCRC:], uint64(checkpointSum(0, out[:checkpointHeaderLen-8])))
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
	return ReplaceCache(filepath.Join(cache, CheckpointFile), out)
}

// ReplaceCache replaces the file at path with data as the tail checkpoint
// is replaced: a fresh temp file beside it, renamed over it, and no fsync.
// Nothing durable depends on it: after a crash the file is the old one,
// the new one, or one whose checksums fail (empty, or a part of it), and
// a load ignores it; an old one is still the fold of the ledger bytes it
// names, which were fsynced before it was written. A variable for the
// tests.
var ReplaceCache = func(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// errFoldedBytesChanged: the ledger's bytes before the handle's position
// are no longer those it folded; its state is stale.
var errFoldedBytesChanged = errors.New("the ledger changed under the handle")

// heldCard is a card a checkpoint holds: decoded (card), or the line it
// was restored from, not decoded since, copied as it is.
type heldCard struct {
	id   string
	key  fold.CardKey
	card *wire.Card
	line []byte
}

// overlay is what s holds beyond the snapshot with header hdr: every card
// in memory (those the ledger changed, and any read), by id, the lines of
// those not decoded since the checkpoint s was restored from kept as they
// are; the receipts; and the conflicts the ledger added, in fold order.
// ok is false when a card is held both ways (it never is).
func overlay(s *fold.State, hdr wire.SnapshotHeader) (cards []heldCard, receipts []wire.Keyed, conflicts []wire.Conflict, ok bool) {
	// The lines come in id order; the decoded cards, a few, are sorted
	// and merged in.
	var decoded, lines []heldCard
	s.RangeHeld(func(c *wire.Card) {
		decoded = append(decoded, heldCard{id: c.ID, key: fold.KeyOf(c), card: c})
	}, func(l fold.CardLine) {
		lines = append(lines, heldCard{id: l.ID, key: l.Key, line: l.Line})
	})
	slices.SortFunc(decoded, func(a, b heldCard) int { return strings.Compare(a.id, b.id) })
	cards = make([]heldCard, 0, len(decoded)+len(lines))
	for len(decoded) > 0 || len(lines) > 0 {
		switch {
		case len(lines) == 0 || len(decoded) > 0 && decoded[0].id < lines[0].id:
			cards, decoded = append(cards, decoded[0]), decoded[1:]
		case len(decoded) == 0 || lines[0].id < decoded[0].id:
			cards, lines = append(cards, lines[0]), lines[1:]
		default:
			return nil, nil, nil, false // held both ways: it never is
		}
		if n := len(cards); n > 1 && cards[n-2].id >= cards[n-1].id {
			return nil, nil, nil, false
		}
	}
	s.RangeReceipts(func(rid string, r wire.Receipt) bool {
		receipts = append(receipts, wire.Keyed{RequestID: rid, Receipt: r})
		return true
	})
	slices.SortFunc(receipts, func(a, b wire.Keyed) int { return strings.Compare(a.RequestID, b.RequestID) })
	return cards, receipts, s.Conflicts()[hdr.Conflicts:], true
}

type checkpointError string

func (e checkpointError) Error() string { return string(e) }

// errNoCheckpoint: the state is not one a checkpoint can describe.
const errNoCheckpoint = checkpointError("no tail checkpoint for this state")

// ReadCache reads a local cache file that is a regular file of at most max
// bytes: a FIFO, a device or a link to one (git can commit the link) is an
// error, never a wait or an endless read.
func ReadCache(path string, max int64) ([]byte, error) { return fsutil.ReadRegularMax(path, max) }
