package store

import (
	"bytes"
	"os"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Opening snapshot.json through its index: the header and the conflicts
// are read at once, cards and receipts as they are asked for; without a
// valid index the snapshot is read whole.

// openSnapshotIndexed opens snapshot.json for loading. With a valid cached
// index the state reads card and receipt lines as it needs them, from a
// snapshotSource that holds the file open (released by State.release);
// otherwise the whole snapshot is decoded (readWhole), which also writes
// an index for the next caller. f is the snapshot, open, or nil when there
// is none; the caller closes it unless the state holds it (s.src != nil).
func openSnapshotIndexed(dir string, vet func(path string, f *os.File) error) (s *fold.State, hdr wire.SnapshotHeader, f *os.File, err error) {
	return openSnapshot(dir, func(path string, f *os.File) (*fold.State, wire.SnapshotHeader, error) {
		fi, err := f.Stat()
		if err != nil {
			return nil, wire.SnapshotHeader{}, err
		}
		headerLine, err := readFirstLine(f)
		if err != nil {
			return nil, wire.SnapshotHeader{}, err
		}
		id := snapshotIdentity(fi, headerLine)
		if ix := openIndex(dir, f, path, id); ix != nil {
			s, hdr, err := lazyState(ix, headerLine)
			if err == nil && hdr.V < 3 {
				// Its cards lack the counts of open children, derived
				// from all of them: read it whole until a compaction
				// writes it at this version.
				err = errIndexMismatch
			}
			if err == nil {
				s.SetSource(&snapshotSource{dir: dir, path: path, f: f, info: fi, id: id, cards: hdr.Cards, ix: ix})
				return s, hdr, nil
			}
			ix.close()
			// A header or conflict list that does not read: report it
			// the way a full decode does, with its line number.
		}
		if err := vet(path, f); err != nil {
			return nil, wire.SnapshotHeader{}, err
		}
		return readWhole(dir, path, f, fi, id)
	})
}

// lazyState is the state of a snapshot read through its index: the header
// and the conflicts now, cards and receipts when they are asked for (the
// caller sets the source).
func lazyState(ix *snapshotIndex, headerLine []byte) (*fold.State, wire.SnapshotHeader, error) {
	var hdr wire.SnapshotHeader
	line, err := wire.CheckFrame(headerLine)
	if err == nil {
		hdr, err = wire.ReadHeader(line)
	}
	if err != nil || hdr.V == 0 || hdr.V > wire.FormatVersion || hdr.Cards != ix.cards.n || hdr.Receipts != ix.receipts.n {
		return nil, hdr, errIndexMismatch
	}
	s := fold.NewState()
	var tail []byte
	if err := ix.read(func() (err error) { tail, err = ix.readRange(ix.conflicts, ix.size); return err }); err != nil {
		return nil, hdr, err
	}
	for len(tail) > 0 {
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			i = len(tail) - 1 // a final line that lost its newline
		}
		var l wire.SnapshotLine
		raw, err := wire.CheckFrame(tail[:i+1])
		if err == nil {
			l, err = wire.ReadSnapshotLine(raw)
		}
		if err != nil || l.Conflict == nil {
			return nil, hdr, errIndexMismatch
		}
		s.RestoreConflict(*l.Conflict)
		tail = tail[i+1:]
	}
	if s.NumConflicts() != hdr.Conflicts {
		return nil, hdr, errIndexMismatch
	}
	s.RestorePosition(hdr.Events, wire.Event{At: hdr.LastAt, ID: hdr.LastID})
	return s, hdr, nil
}

// readFirstLine returns the first line of f, newline included.
func readFirstLine(f *os.File) ([]byte, error) {
	buf := make([]byte, 0, 1024)
	chunk := make([]byte, 1024)
	for off := int64(0); ; {
		n, err := f.ReadAt(chunk, off)
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			return append(buf, chunk[:i+1]...), nil
		}
		buf = append(buf, chunk[:n]...)
		off += int64(n)
		if err != nil || len(buf) > wire.MaxLine {
			// No complete first line: the full decode reports it.
			return buf, nil
		}
	}
}
