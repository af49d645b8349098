package store

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// The tail checkpoint, cache/tail.ckpt: the state the ledger's first lines
// fold to over the snapshot, so a load folds only the lines after it. Its
// layout and checks are specified under "Tail checkpoint" in doc.go;
// checkpoint_write.go writes it. It is a cache: whatever is wrong with it
// (another snapshot or ledger, other bytes, damage, a file from elsewhere)
// makes a load ignore it and fold the tail as if it were not there.
const CheckpointFile = "tail.ckpt"

var checkpointMagic = [8]byte{'b', 'l', 't', 'a', 'i', 'l', '0', '4'}

// checkpointSum is the checkpoint's own checksum (header, body, ledger
// prefix): CRC-32 IEEE, whose carry-less-multiply path is ready in a few
// microseconds, where CRC-32C's hardware path costs ~0.2 ms to set up and
// its software path ~0.1 ms for the ~250 KiB a load checks. It guards
// against damage, as the line CRCs do; the binding guards the rest.
func checkpointSum(crc uint32, b []byte) uint32 { return crc32.Update(crc, crc32.IEEETable, b) }

// Header fields, in order, each a little-endian uint64 after the magic;
// the last is the checkpointSum of the bytes before it.
const (
	ckFormat = iota // wire.FormatVersion of the bl that wrote it
	ckSnapDev
	ckSnapIno
	ckSnapSize
	ckSnapMtime
	ckSnapCtime // no one sets it back: a rewrite in place with the mtime restored changes it
	ckSnapHeaderCRC
	ckLedgerDev
	ckLedgerIno
	ckOffset // ledger bytes folded
	ckLines  // ledger lines folded
	ckBase   // where the ledger's own events start (Position.base)
	ckPrefixCRC
	ckEvents  // the state's event count
	ckCreated // cards created since the snapshot
	ckIDs     // event ids noted (Position.ids), 8 bytes each
	ckCards   // card lines, each with its key (cardKeyLen bytes)
	ckBodyLen
	ckBodyCRC
	ckHeaderCRC
	ckFields
)

const checkpointHeaderLen = 8 + 8*ckFields

// maxCheckpoint is the largest checkpoint a load reads; a writer writes
// none larger than CheckpointMaxCards cards make.
const maxCheckpoint = 64 << 20

// checkpointIdentity is what binds a checkpoint to this checkout's files.
type checkpointIdentity struct {
	snapDev, snapIno, snapSize, snapMtime, snapCtime, snapHeaderCRC uint64
	ledgerDev, ledgerIno                                            uint64
}

// identify reads the identity of the snapshot open in snap (stat'ed as
// snapInfo) and of the ledger stat'ed as ledInfo; false when the platform
// has no inode numbers or the snapshot's first line does not read.
func identify(snap *os.File, snapInfo, ledInfo os.FileInfo) (checkpointIdentity, wire.SnapshotHeader, bool) {
	var id checkpointIdentity
	var hdr wire.SnapshotHeader
	sd, si, ok1 := fileKey(snapInfo)
	ld, li, ok2 := fileKey(ledInfo)
	if !ok1 || !ok2 {
		return id, hdr, false
	}
	first, err := readFirstLine(snap)
	if err != nil || len(first) == 0 || first[len(first)-1] != '\n' {
		return id, hdr, false
	}
	line, err := wire.CheckFrame(first)
	if err == nil {
		hdr, err = wire.ReadHeader(line)
	}
	if err != nil {
		return id, hdr, false
	}
	id = checkpointIdentity{snapDev: sd, snapIno: si, snapSize: uint64(snapInfo.Size()), snapMtime: uint64(snapInfo.ModTime().UnixNano()),
		snapCtime: changeTime(snapInfo), snapHeaderCRC: uint64(wire.Checksum(first)), ledgerDev: ld, ledgerIno: li}
	return id, hdr, true
}

// tailCheckpoint is a checkpoint read and checked, not yet applied.
type tailCheckpoint struct {
	offset, base   int64
	prefixSum      uint32 // of the ledger's bytes before offset
	lines, created int
	events         int64
	ids            []uint64
	last           *wire.Event
	cardLines      []fold.CardLine
	receipts       []wire.Keyed
	conflicts      []wire.Conflict
}

// readCheckpoint reads dir's checkpoint and checks it against the snapshot
// open in snap (stat'ed as snapInfo, with header hdr) and the ledger open
// in led: nil unless it was written for exactly these files and these
// ledger bytes, and reads whole.
func readCheckpoint(dir string, snap *os.File, snapInfo os.FileInfo, hdr wire.SnapshotHeader, led *os.File) *tailCheckpoint {
	// Only a regular file of bounded size is read: a symlink (to a FIFO,
	// to /dev/zero) that git brought in is not followed, even one that
	// replaces the file while it is being opened.
	data, err := readRegular(filepath.Join(dir, CacheDir, CheckpointFile), maxCheckpoint)
	if err != nil || len(data) < checkpointHeaderLen || !bytes.Equal(data[:8], checkpointMagic[:]) {
		return nil
	}
	le := binary.LittleEndian
	field := func(i int) uint64 { return le.Uint64(data[8+8*i:]) }
	if uint64(checkpointSum(0, data[:checkpointHeaderLen-8])) != field(ckHeaderCRC) || field(ckFormat) != wire.FormatVersion {
		return nil
	}
	ledInfo, err := led.Stat()
	if err != nil {
		return nil
	}
	id, _, ok := identify(snap, snapInfo, ledInfo)
	if !ok || id != (checkpointIdentity{field(ckSnapDev), field(ckSnapIno), field(ckSnapSize), field(ckSnapMtime), field(ckSnapCtime), field(ckSnapHeaderCRC), field(ckLedgerDev), field(ckLedgerIno)}) {
		return nil
	}
	ck := &tailCheckpoint{offset: int64(field(ckOffset)), base: int64(field(ckBase)), lines: int(field(ckLines)),
		events: int64(field(ckEvents)), created: int(field(ckCreated)), prefixSum: uint32(field(ckPrefixCRC))}
	body := data[checkpointHeaderLen:]
	nids := field(ckIDs)
	if field(ckBodyLen) != uint64(len(body)) || nids > uint64(len(body))/8 || uint64(checkpointSum(0, body)) != field(ckBodyCRC) {
		return nil
	}
	if ck.base < 0 || ck.offset <= ck.base || ck.offset > ledInfo.Size() || ck.lines <= 0 || ck.events < hdr.Events || ck.created < 0 {
		return nil
	}
	// The ledger bytes it folded are still the ledger's first bytes.
	if sum, ok := prefixChecksum(led, ck.offset); !ok || uint64(sum) != field(ckPrefixCRC) {
		return nil
	}
	ck.ids = make([]uint64, nids)
	for i := range ck.ids {
		ck.ids[i] = le.Uint64(body[8*i:])
		if i > 0 && ck.ids[i] <= ck.ids[i-1] {
			return nil // the writer's order, which the search relies on
		}
	}
	keys := body[8*nids:]
	ncards := field(ckCards)
	if ncards > uint64(len(keys))/cardKeyLen {
		return nil
	}
	keys, lines := keys[:cardKeyLen*ncards], keys[cardKeyLen*ncards:]
	ck.cardLines = make([]fold.CardLine, 0, ncards)
	next := func() []byte {
		i := bytes.IndexByte(lines, '\n')
		if i < 0 {
			return nil
		}
		l := lines[:i+1]
		lines = lines[i+1:]
		return l
	}
	if ck.last, err = wire.DecodeLine(next()); err != nil {
		return nil
	}
	for len(lines) > 0 {
		// The body's checksum covers the lines: each one's own is not
		// checked again (CheckFrame), only stripped of its line end.
		raw := next()
		if raw == nil {
			return nil
		}
		raw = raw[:len(raw)-1]
		// A card's line is decoded when the state first needs that card
		// (fold.State.RestoreCardLines): here only its id is read, and its
		// key from the table.
		if id, ok := cardLineID(raw); ok {
			n := len(ck.cardLines)
			if len(ck.receipts) > 0 || len(ck.conflicts) > 0 || n > 0 && ck.cardLines[n-1].ID >= id || uint64(n) == ncards {
				return nil // the writer's order: cards by id, then the rest; a key each
			}
			key, ok := readCardKey(keys[cardKeyLen*n:])
			if !ok {
				return nil
			}
			ck.cardLines = append(ck.cardLines, fold.CardLine{ID: id, Key: key, Line: raw})
			continue
		}
		l, err := wire.ReadSnapshotLine(raw)
		switch {
		case err != nil:
			return nil
		case l.Card != nil:
			return nil // every card's line starts as cardLineID reads it
		case l.Receipt != nil:
			ck.receipts = append(ck.receipts, *l.Receipt)
		case l.Conflict != nil:
			ck.conflicts = append(ck.conflicts, *l.Conflict)
		default:
			return nil
		}
	}
	if uint64(len(ck.cardLines)) != ncards {
		return nil
	}
	return ck
}

// cardKeyLen is the size of a card's key in a checkpoint: its priority
// (int64), its status (uint32, its place in wire.Statuses), then
// created_at and the lease's end (zero for none), each as Unix seconds
// (int64) and nanoseconds (uint32).
const cardKeyLen = 36

func appendCardKey(b []byte, k fold.CardKey) ([]byte, bool) {
	st := slices.Index(wire.Statuses, k.Status)
	if st < 0 {
		return b, false
	}
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(int64(k.Priority)))
	b = le.AppendUint32(b, uint32(st))
	for _, t := range []time.Time{k.CreatedAt, k.LeaseEnd} {
		b = le.AppendUint64(b, uint64(t.Unix()))
		b = le.AppendUint32(b, uint32(t.Nanosecond()))
	}
	return b, true
}

func readCardKey(b []byte) (k fold.CardKey, ok bool) {
	le := binary.LittleEndian
	prio, st := int64(le.Uint64(b)), le.Uint32(b[8:])
	if int64(int(prio)) != prio || st >= uint32(len(wire.Statuses)) {
		return k, false
	}
	k.Priority, k.Status = int(prio), wire.Statuses[st]
	for i, t := range []*time.Time{&k.CreatedAt, &k.LeaseEnd} {
		sec, nsec := int64(le.Uint64(b[12+12*i:])), le.Uint32(b[20+12*i:])
		if nsec >= 1e9 {
			return k, false
		}
		*t = time.Unix(sec, int64(nsec)).UTC()
	}
	return k, true
}

// cardLinePrefix is how the writer's encoder starts a card's line.
var cardLinePrefix = []byte(`{"card":{"id":"`)

// cardLineID reads the id of the card a checkpoint line holds, as the
// encoder writes it (the id first, a valid id needs no escapes); false
// for any other line. The line is decoded, and its card's id checked
// against this one, when the card is first needed.
func cardLineID(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, cardLinePrefix)
	if !ok {
		return "", false
	}
	i := bytes.IndexByte(rest, '"')
	if i <= 0 || wire.ValidID(string(rest[:i])) != nil {
		return "", false
	}
	return string(rest[:i]), true
}

// useCheckpoint applies dir's checkpoint, when it holds for these files,
// to s (the snapshot's state, nothing folded yet) and pos (at the start of
// the ledger's own events), so folding goes on after it. It reports
// whether it did; when not, s and pos are as they were.
func useCheckpoint(dir string, snap *os.File, snapInfo os.FileInfo, hdr wire.SnapshotHeader, s *fold.State, pos *Position) bool {
	if snap == nil || pos.file == nil || s.Events() != hdr.Events || s.NumConflicts() != hdr.Conflicts || s.Created() != 0 {
		return false
	}
	ck := readCheckpoint(dir, snap, snapInfo, hdr, pos.file)
	if ck == nil || ck.base != pos.base || ck.lines <= pos.lines || ck.last.ID == "" {
		return false
	}
	// Each line folded is one event (a conflict too) and one id; each card
	// created since the snapshot is among the cards held.
	folded := ck.lines - pos.lines
	if ck.events-hdr.Events != int64(folded) || len(ck.ids) > folded || len(ck.conflicts) > folded || ck.created > len(ck.cardLines) {
		return false
	}
	if pos.last != nil && !pos.last.Before(ck.last) {
		return false
	}
	s.RestoreCardLines(ck.cardLines)
	for _, r := range ck.receipts {
		s.RestoreReceipt(r.RequestID, r.Receipt)
	}
	for _, c := range ck.conflicts {
		s.RestoreConflict(c)
	}
	s.RestorePosition(ck.events, *ck.last)
	s.RestoreCreated(ck.created)
	pos.ids, pos.ckIDs = nil, ck.ids
	pos.offset, pos.lines, pos.last, pos.bare = ck.offset, ck.lines, ck.last, false
	pos.sum, pos.summed = ck.prefixSum, true
	return true
}

// prefixSum extends the checkpointSum of a ledger prefix by b.
func prefixSum(crc uint32, b []byte) uint32 { return checkpointSum(crc, b) }

// prefixChecksum is the checkpointSum of the first n bytes of f, read through a
// small buffer; ok is false when f is shorter or they do not end a line.
func prefixChecksum(f *os.File, n int64) (sum uint32, ok bool) {
	buf := make([]byte, min(n, 32<<10))
	var last byte
	for off := int64(0); off < n; {
		k, _ := f.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		if k == 0 {
			return 0, false
		}
		sum = checkpointSum(sum, buf[:k])
		last = buf[k-1]
		off += int64(k)
	}
	return sum, n > 0 && last == '\n'
}
