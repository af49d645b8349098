package store

import (
	"bufio"
	"io"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// snapshotWritten is what encodeSnapshotTo wrote: the header line, the
// size, and where each line went, for the snapshot index.
type snapshotWritten struct {
	header []byte
	size   int64
	ib     *IndexBuild
}

// encodeSnapshotTo writes s as snapshot.json to w, line by line, the bytes
// encodeSnapshot returns: a compaction of 100,000 cards streams its
// snapshot to the file instead of building it in memory. The tail is the
// ledger prefix the snapshot covers, by length and CRC (zero and "" for
// none). mid, when set, runs once half the cards are written (a
// crash-test failpoint); w is flushed before it.
func encodeSnapshotTo(w io.Writer, s *fold.State, archives []string, tailBytes int64, tailCRC string, mid func()) (out snapshotWritten, err error) {
	hdr, cards, receipts, conflicts, err := s.SnapshotLines()
	if err != nil {
		return out, err
	}
	hdr.Seq, hdr.Archives = len(archives), archiveFingerprint(archives)
	if tailBytes > 0 {
		hdr.TailBytes, hdr.TailCRC = tailBytes, tailCRC
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	var line []byte
	add := func(v any) (off int64, n int, err error) {
		if line, err = wire.AppendFramed(line[:0], v); err != nil {
			return 0, 0, err
		}
		off = out.size
		if _, err = bw.Write(line); err != nil {
			return 0, 0, err
		}
		out.size += int64(len(line))
		return off, len(line), nil
	}
	if _, _, err = add(hdr); err != nil {
		return out, err
	}
	out.header = append([]byte(nil), line...)
	out.ib = &IndexBuild{}
	for i, c := range cards {
		if i == len(cards)/2 && mid != nil {
			if err := bw.Flush(); err != nil {
				return out, err
			}
			mid()
		}
		off, n, err := add(wire.SnapshotLine{Card: c})
		if err != nil {
			return out, err
		}
		out.ib.addCard(c, off, n)
	}
	for i := range receipts {
		off, n, err := add(wire.SnapshotLine{Receipt: &receipts[i]})
		if err != nil {
			return out, err
		}
		out.ib.receipts = append(out.ib.receipts, indexEntry{key: receipts[i].RequestID, off: off, n: n})
	}
	out.ib.conflicts = out.size
	for i := range conflicts {
		if _, _, err := add(wire.SnapshotLine{Conflict: &conflicts[i]}); err != nil {
			return out, err
		}
	}
	return out, bw.Flush()
}
