package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// File names inside a backlog directory.
const (
	LedgerFile = "ledger.jsonl"
	BrokenFile = LedgerFile + ".broken"
	ConfigFile = "config.json"
	LockFile   = "lock"
	IgnoreFile = ".gitignore"
	// AttributesFile tells git how to merge the backlog's files (see
	// "Git" in doc.go).
	AttributesFile = ".gitattributes"
)

// Position is how far a reader has folded a ledger file.
type Position struct {
	info   os.FileInfo // identity of the file read, to notice replacement
	offset int64       // bytes folded
	lines  int         // lines folded
	last   *wire.Event // last event folded, for the ordering check
	// snap is the snapshot's newest event while no ledger line has been
	// folded yet: a first line not after it means the ledger and the
	// snapshot disagree (errStale), not that the file is damaged.
	snap *wire.Event
	// base is where the ledger's own events start: past the prefix a
	// compaction cut short left behind, which the snapshot already holds.
	base         int64
	coveredLines int // lines before base
	// bare: the last event folded is the file's last line and has no
	// line end; a writer restores the newline before appending.
	bare bool
	// unsorted: the file's lines are not in strictly increasing (at, id)
	// order (a git union merge); they were folded sorted, each once
	// (readSorted), and last is the newest of them.
	unsorted bool
	// ids holds a hash of each event id folded from this file, so that an
	// id met again (a git union merge; possibly with another stamp, see
	// settle.go) sends the file to readSorted even when its lines are in
	// order. A hash collision only costs that slower read.
	ids map[uint64]struct{}
	// ckIDs holds, sorted, the hashes the tail checkpoint the read
	// started from noted (ids holds those folded after it): a thousand
	// hashes searched in place cost less than a map built of them.
	ckIDs []uint64
	// sum is prefixSum over the file's bytes before offset as this handle
	// folded or wrote them, when summed: a checkpoint names these bytes,
	// not whatever the file holds when it is written (an editor that
	// rewrites a line in place under a long-lived writer).
	sum     uint32
	summed  bool
	idsHint int // events the first read expects (from the bytes left), to size ids once
	// file is the ledger being read, kept open between reads: filesystems
	// reuse a freed inode number at once, so only an open file's identity
	// can be compared with whatever the path names now.
	file *os.File
}

// idHash is the hash Position.ids keeps of an event id: FNV-1a, the same
// in every process, so the tail checkpoint can carry the ids a load
// would have noted (a hash met twice only costs a sorted read).
func idHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// seen notes id as folded and reports whether it was already.
func (pos *Position) seen(id string) bool {
	h := idHash(id)
	if pos.has(h) {
		return true
	}
	if pos.ids == nil {
		pos.ids = make(map[uint64]struct{}, pos.idsHint)
	}
	pos.ids[h] = struct{}{}
	return false
}

// has reports whether an id with hash h was folded.
func (pos *Position) has(h uint64) bool {
	if _, ok := slices.BinarySearch(pos.ckIDs, h); ok {
		return true
	}
	_, ok := pos.ids[h]
	return ok
}

// close releases the ledger file a Position holds.
// start is where a reader goes on from pos.
func (pos *Position) start() wire.LineStart {
	return wire.LineStart{Off: pos.offset, N: pos.lines, Bare: pos.bare}
}

func (pos *Position) close() {
	if pos.file != nil {
		pos.file.Close()
		pos.file = nil
	}
}

// readFrom folds the events of the ledger at path from pos into apply,
// returning the new Position and any torn tail after it. Lines are read and
// judged by LineReader; what is not an event or a torn tail is a
// *CorruptError. An event not after the one before it is errUnsorted (or
// errStale when the one before it is the snapshot's newest): the caller
// folds the file again with readSorted.
//
// The first call opens the file (unless the Position already holds it, see
// SnapshotPosition) and keeps it in the returned Position; the caller
// closes it (Position.close) when it drops the Position. Later calls
// read the same open file and report errReplaced once the path names
// another file or the file shrank below what was read.
func readFrom(path string, pos Position, apply func(*wire.Event)) (Position, *wire.TornTail, error) {
	if pos.file == nil {
		f, err := fsutil.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return pos, nil, wire.Errorf(wire.ErrNotInitialized, "%s is missing", path)
			}
			return pos, nil, err
		}
		pos.file = f
	} else if pos.info != nil { // read before: is it still the file at path?
		now, err := os.Stat(path)
		if err != nil {
			return pos, nil, err
		}
		if !os.SameFile(now, pos.info) || now.Size() < pos.offset {
			return pos, nil, errReplaced
		}
	}
	info, err := pos.file.Stat()
	if err != nil {
		return pos, nil, err
	}
	pos.info = info
	if info.Size() == pos.offset {
		return pos, nil, nil // nothing appended since the last read
	}
	// A buffer sized to what is new: a writer catching up on one line
	// should not allocate for a whole history.
	size := min(max(info.Size()-pos.offset, wire.MinBufSize), wire.FileBufSize)
	if pos.ids == nil {
		pos.idsHint = int((info.Size() - pos.offset) / 200) // a typical line is 200–300 bytes
	}
	lr := wire.NewLineReader(path, pos.file, pos.start(), int(size))
	sum := pos.sum
	if pos.summed {
		lr.Consumed = func(b []byte) { sum = prefixSum(sum, b) }
	}
	for {
		e, l, torn, err := lr.Event()
		if err == io.EOF {
			// Past a line end that finished the last event, if one came.
			pos.offset, pos.bare, pos.sum = lr.Off, lr.Bare, sum
			return pos, nil, nil
		}
		if torn != nil || err != nil {
			return pos, torn, err
		}
		if pos.last != nil && pos.last == pos.snap && !pos.last.Before(e) {
			return pos, nil, ErrStale
		}
		if pos.last != nil && !pos.last.Before(e) || pos.seen(e.ID) {
			return pos, nil, errUnsorted
		}
		apply(e)
		pos.offset, pos.bare, pos.sum = l.Off+l.Size, !l.Ended, sum
		pos.lines = l.N
		pos.last = e
	}
}

var (
	errReplaced = errors.New("ledger file was replaced")
	// ErrStale: the ledger holds events the snapshot should come after,
	// or the archive set changed; a git merge does this. The backlog is
	// normalized under the lock (Normalize) and loaded again.
	ErrStale = errors.New("snapshot is stale")
	// errUnsorted: the ledger's lines are out of (at, id) order or
	// repeated (a git union merge); it is folded again with readSorted.
	errUnsorted = errors.New("ledger lines out of order")
)

// readSorted is readFrom for a ledger whose lines are out of order or
// repeated: it reads the file from pos whole and folds its events sorted by
// (at, id), each once, so the state is the one the sorted, deduplicated
// file would give. Nothing is written. Two different lines with one event
// id are damage. An event not after the snapshot's newest is errStale.
func readSorted(path string, pos Position, apply func(*wire.Event)) (Position, *wire.TornTail, error) {
	if pos.file == nil {
		f, err := os.Open(path)
		if err != nil {
			return pos, nil, err
		}
		pos.file = f
	}
	info, err := pos.file.Stat()
	if err != nil {
		return pos, nil, err
	}
	pos.info = info
	lr := wire.NewLineReader(path, pos.file, pos.start(), int(min(max(info.Size()-pos.offset, wire.MinBufSize), wire.FileBufSize)))
	evs, end, torn, err := settleLines(lr)
	if err != nil {
		return pos, nil, err
	}
	if len(evs) > 0 && pos.snap != nil && !pos.snap.Before(evs[0].e) {
		return pos, nil, ErrStale
	}
	for _, s := range evs {
		pos.seen(s.e.ID)
		apply(s.e)
	}
	if len(evs) > 0 {
		pos.last = evs[len(evs)-1].e
	}
	pos.offset, pos.lines, pos.bare = end.Off, end.N, end.Bare
	pos.unsorted, pos.summed = true, false
	return pos, torn, nil
}

// settled is one event of a file read by settleLines, with its line.
type settled struct {
	e    *wire.Event
	line []byte // the line's bytes, line end included when it has one
}

// settleLines reads every event lr has left, up to a torn tail, and
// returns them sorted by (at, id), each event id once: the one rule that
// settles what a git union merge leaves in an event file. Two copies of
// one event id keep the one SettleCopies picks; two different events with
// one id are a *CorruptError (the second of them). end is where it
// stopped (where a reader goes on): after the last event, before a torn
// tail or at the end of the file.
func settleLines(lr *wire.LineReader) (_ []settled, end wire.LineStart, _ *wire.TornTail, _ error) {
	var out []settled
	var torn *wire.TornTail
	end = wire.LineStart{Off: lr.Off, N: lr.N, Bare: lr.Bare}
	byID := map[string]int{} // event id -> index in out
	for {
		e, l, t, err := lr.Event()
		if err == io.EOF {
			end = wire.LineStart{Off: lr.Off, N: lr.N, Bare: lr.Bare}
			break
		}
		if t != nil {
			torn = t
			break
		}
		if err != nil {
			return nil, end, nil, err
		}
		end = wire.LineStart{Off: l.Off + l.Size, N: l.N, Bare: !l.Ended}
		if i, dup := byID[e.ID]; dup {
			if !bytes.Equal(bytes.TrimRight(out[i].line, "\r\n"), l.Body) {
				_, second, err := wire.SettleCopies(out[i].e, e)
				if err != nil {
					return nil, end, nil, lr.Corrupt(&l, err)
				}
				if second { // the later stamp (see settle.go)
					out[i] = settled{e: e, line: append([]byte(nil), l.Raw...)}
				}
			}
			continue
		}
		byID[e.ID] = len(out)
		out = append(out, settled{e: e, line: append([]byte(nil), l.Raw...)})
	}
	slices.SortStableFunc(out, func(a, b settled) int { return wire.ByAtID(a.e, b.e) })
	return out, end, torn, nil
}

// settleTail is the writer's policy for the end of the ledger, run under
// the lock, where no append can be in progress. A final event that lost its
// newline gets it back, so the next line is appended after it rather than
// onto it. A torn tail (never acknowledged) is set aside into
// ledger.jsonl.broken and the ledger truncated to the last event; the
// writer says so on stderr (Options.Warn).
func (b *Store) settleTail() error {
	if b.torn != nil {
		t := b.torn
		if err := SetAside(b.dir, t); err != nil {
			return err
		}
		b.torn = nil
		b.warn(setAsideMessage(b.dir, t))
	}
	if b.pos.bare {
		if err := RestoreNewline(filepath.Join(b.dir, LedgerFile), b.pos.offset); err != nil {
			return err
		}
		b.pos.offset++
		b.pos.bare = false
		b.pos.sum = prefixSum(b.pos.sum, []byte{'\n'})
	}
	return nil
}

// setAsideMessage says what a writer set aside, in one line.
func setAsideMessage(dir string, t *wire.TornTail) string {
	return fmt.Sprintf("set aside a torn tail of %d bytes at line %d of %s (%s; never acknowledged) into %s",
		t.Bytes, t.Line, filepath.Join(dir, LedgerFile), t.Reason, filepath.Join(dir, BrokenFile))
}

// RestoreNewline appends the newline a final event lost (an editor, a copy,
// git), after checking the file still ends at size. The caller holds the
// lock.
func RestoreNewline(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != size {
		return errors.Join(err, fmt.Errorf("ledger: %s changed under the lock; retry", path))
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		_ = f.Truncate(size)
		return fmt.Errorf("restore the final newline of %s: %w", path, err)
	}
	if err := Fdatasync(f); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// SetAside appends the torn tail to the .broken file, fsyncs it, then
// truncates the ledger to the last good line. The caller holds the lock.
func SetAside(dir string, t *wire.TornTail) error {
	path := filepath.Join(dir, LedgerFile)
	if t.Growing {
		// Under the lock no bl appends: something else is writing the
		// ledger, and its line must not be cut off.
		return fmt.Errorf("ledger: %s changed under the lock; retry", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	tail := make([]byte, t.Bytes)
	if _, err := f.ReadAt(tail, t.Offset); err != nil && err != io.EOF {
		return fmt.Errorf("read torn tail of %s: %w", path, err)
	}
	if !bytes.HasSuffix(tail, []byte{'\n'}) {
		tail = append(tail, '\n')
	}
	if err := AppendBroken(dir, tail); err != nil {
		return fmt.Errorf("set aside torn tail of %s: %w", path, err)
	}
	if err := f.Truncate(t.Offset); err != nil {
		return fmt.Errorf("truncate torn tail of %s: %w", path, err)
	}
	return f.Sync()
}

// Close closes the ledger file the position holds open.
func (pos *Position) Close() { pos.close() }

// File is the ledger file the position holds open.
func (pos *Position) File() *os.File { return pos.file }

// Base is the offset the fold of the ledger starts at: the end of the
// prefix the snapshot already folded.
func (pos *Position) Base() int64 { return pos.base }

// Snap is the snapshot's newest event, nil when there is none.
func (pos *Position) Snap() *wire.Event { return pos.snap }
