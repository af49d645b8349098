package store

// Reading history out of the files that hold it: the archive segments and
// the ledger, merged in (at, id) order, each event once (see "Git" in doc.go,
// and settle.go).

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Segments lists the files that hold a backlog's history, oldest first:
// the archived segments of past compactions, then the ledger.
func Segments(dir string) ([]string, error) {
	names, err := ArchiveNames(dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names)+1)
	for _, name := range names {
		out = append(out, filepath.Join(dir, filepath.FromSlash(name)))
	}
	return append(out, filepath.Join(dir, LedgerFile)), nil
}

// ReadEvents calls fn for every event in the file at path after offset
// that comes after from, in file order (a file git union-merged may hold
// them out of order: each is judged against from alone), and returns the
// cursor of the newest one it passed to fn (from when none) and the offset just after the last
// event read. A torn tail ends the read quietly (an append may be in
// progress); damage is a *CorruptError.
func ReadEvents(path string, offset int64, from wire.Cursor, fn func(*wire.Event) error) (wire.Cursor, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return from, offset, err
	}
	defer f.Close()
	return ReadEventsFile(f, path, offset, from, fn)
}

// ReadEventsFile is ReadEvents on a file already open, so a follower can
// finish reading a ledger that was replaced after it opened it. Line
// numbers in errors count from offset.
func ReadEventsFile(f *os.File, path string, offset int64, from wire.Cursor, fn func(*wire.Event) error) (wire.Cursor, int64, error) {
	bare, err := wire.EndsBare(f, offset)
	if err != nil {
		return from, offset, err
	}
	lr := wire.NewLineReader(path, f, wire.LineStart{Off: offset, Bare: bare}, wire.FileBufSize)
	start := from
	for {
		e, l, torn, err := lr.Event()
		if err == io.EOF {
			return from, lr.Off, nil
		}
		if torn != nil {
			return from, offset, nil // an append in progress, or a torn tail
		}
		if err != nil {
			return from, offset, err
		}
		offset = l.Off + l.Size
		if start.Before(e) {
			if err := fn(e); err != nil {
				return from, offset, err
			}
			if from.Before(e) {
				from = wire.CursorOf(e)
			}
		}
	}
}

// ArchivedEvents calls fn for every event after from in the given archive
// segments, in (at, id) order and each once, even where segments overlap
// (a merge of two clones' compactions), a segment holds its lines out of
// order or twice (a git union merge), or an event is held with two stamps
// (the later counts; see settle.go). It streams the events: memory grows
// with the number of segments and of event ids (the check of each
// segment's order notes every id's latest stamp), not with the events'
// size, except for a segment out of order, which is read whole. It returns
// the cursor of the last event passed to fn.
func ArchivedEvents(paths []string, from wire.Cursor, fn func(*wire.Event) error) (wire.Cursor, error) {
	return mergeEvents(paths, "", true, from, fn)
}

// mergeEvents is ArchivedEvents over paths and, when ledger is set, the
// ledger too: read whole (it is the tail since the last compaction), sorted
// and each event once, stopping quietly at a torn tail (an append may be
// in progress). A missing ledger holds no events. The ledger's ids are
// always checked against the segments for a later stamp; the segments'
// against each other only when across is set: segments a snapshot vouches
// for hold no event twice with two stamps (normalization keeps only the
// later copy), so a backlog in its normal form skips that bookkeeping.
func mergeEvents(paths []string, ledger string, across bool, from wire.Cursor, fn func(*wire.Event) error) (wire.Cursor, error) {
	h := &segHeap{}
	defer func() {
		for _, s := range *h {
			s.close()
		}
	}()
	push := func(s *segReader) error {
		if err := s.next(); err != nil {
			s.close()
			return err
		}
		if s.ev != nil {
			heap.Push(h, s)
		} else {
			s.close()
		}
		return nil
	}
	latest := stamps{}
	if ledger != "" {
		f, err := os.Open(ledger)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return from, err
		}
		if err == nil {
			evs, _, _, err := settleLines(wire.NewLineReader(ledger, f, wire.LineStart{}, wire.FileBufSize))
			f.Close()
			if err != nil {
				return from, err
			}
			if len(paths) > 0 { // its ids need checking against segments only
				latest.noteAll(evs)
			}
			if err := push(&segReader{path: ledger, mem: evs}); err != nil {
				return from, err
			}
		}
	}
	note := latest.note // every id of every segment
	if !across {
		note = latest.raise // only the ledger's ids
	}
	for _, p := range paths {
		s, err := openSegment(p, note)
		if err != nil {
			return from, err
		}
		if err := push(s); err != nil {
			return from, err
		}
	}
	var lastID string
	for h.Len() > 0 {
		s := (*h)[0]
		e := s.ev
		if err := s.next(); err != nil {
			return from, err
		}
		if s.ev == nil {
			heap.Pop(h)
			s.close()
		} else {
			heap.Fix(h, 0)
		}
		if e.ID == lastID || !from.Before(e) || (len(latest) > 0 && latest.superseded(e)) {
			continue
		}
		lastID = e.ID
		if err := fn(e); err != nil {
			return from, err
		}
		from = wire.CursorOf(e)
	}
	return from, nil
}

// openSegment opens an archive segment for mergeEvents: streamed when its
// lines are in strictly increasing (at, id) order, as bl writes them,
// else read whole, sorted and each event once (settleLines).
func openSegment(path string, note func(id []byte, at time.Time)) (*segReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if inOrder(f, note) {
		return &segReader{path: path, f: f, lr: wire.NewLineReader(path, f, wire.LineStart{}, wire.SegmentBufSize)}, nil
	}
	defer f.Close()
	evs, _, torn, err := settleLines(wire.NewLineReader(path, f, wire.LineStart{}, wire.SegmentBufSize))
	if err != nil {
		return nil, err
	}
	if torn != nil {
		return nil, &wire.CorruptError{Path: path, Line: torn.Line, Offset: torn.Offset, Err: fmt.Errorf("%w: %s in an archive segment, which is written whole", wire.ErrFraming, torn.Reason)}
	}
	for _, s := range evs {
		note([]byte(s.e.ID), s.e.At) // read whole: rare, and small next to the decode
	}
	return &segReader{path: path, mem: evs}, nil
}

// stamps is each event id's latest stamp among the files a history read
// merges, so that of an event held with two stamps only the later copy is
// passed on (see settle.go). Ids are kept as two independent 64-bit hashes,
// without allocating: the first is the key, the second tells two ids whose
// first hashes collide apart, and such an entry never hides an event.
type stamps map[uint64]stampEntry

type stampEntry struct {
	at    int64  // the latest stamp, Unix nanoseconds
	check uint64 // the id's second hash
	mixed bool   // two different ids share the key: hide nothing
}

var stampSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func (st stamps) note(id []byte, at time.Time) {
	st.update(maphash.Bytes(stampSeeds[0], id), maphash.Bytes(stampSeeds[1], id), at, true)
}

// raise is note for the ids already noted alone.
func (st stamps) raise(id []byte, at time.Time) {
	st.update(maphash.Bytes(stampSeeds[0], id), maphash.Bytes(stampSeeds[1], id), at, false)
}

// update records stamp at for the id whose two hashes are k and c (maphash
// gives a string and its bytes the same hash).
func (st stamps) update(k, c uint64, at time.Time, add bool) {
	ns := at.UnixNano()
	e, ok := st[k]
	switch {
	case !ok:
		if add {
			st[k] = stampEntry{at: ns, check: c}
		}
	case e.check != c:
		e.mixed = true
		st[k] = e
	case ns > e.at:
		e.at = ns
		st[k] = e
	}
}

func (st stamps) noteAll(evs []settled) {
	for _, s := range evs {
		st.update(maphash.String(stampSeeds[0], s.e.ID), maphash.String(stampSeeds[1], s.e.ID), s.e.At, true)
	}
}

// superseded reports whether a later copy of e exists.
func (st stamps) superseded(e *wire.Event) bool {
	s, ok := st[maphash.String(stampSeeds[0], e.ID)]
	return ok && !s.mixed && s.check == maphash.String(stampSeeds[1], e.ID) && s.at > e.At.UnixNano()
}

// inOrder reports whether the event lines of f are in strictly increasing
// (at, id) order, reading only the id and at members of each line. A line
// it cannot read that way counts as in order: the full read that follows
// judges it.
func inOrder(f *os.File, note func(id []byte, at time.Time)) bool {
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), wire.SegmentBufSize)
	var prevAt time.Time
	var prevID []byte
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if at, id, ok := lineKey(line); ok {
				note(id, at)
				if prevID != nil {
					if c := prevAt.Compare(at); c > 0 || (c == 0 && string(prevID) >= string(id)) {
						return false
					}
				}
				prevAt, prevID = at, append(prevID[:0], id...)
			}
		}
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull { // a long line: skip the rest of it
				_, err = r.ReadSlice('\n')
			}
		}
		if err != nil {
			return true
		}
	}
}

// lineKey reads the id and at of an event line in the shape EncodeLine
// writes it: {"v":N,"id":"…","at":"…",…}.
func lineKey(line []byte) (at time.Time, id []byte, ok bool) {
	i := bytes.Index(line, []byte(`,"id":"`))
	if i < 0 || i > 16 {
		return at, nil, false
	}
	i += len(`,"id":"`)
	j := bytes.IndexByte(line[i:], '"')
	if j < 0 {
		return at, nil, false
	}
	id = line[i : i+j]
	k := i + j + 1
	if !bytes.HasPrefix(line[k:], []byte(`,"at":`)) {
		return at, nil, false
	}
	at, end := wire.ScanTime(line, k+len(`,"at":`))
	if end < 0 {
		return at, nil, false
	}
	return at, id, true
}

// segReader reads one archive segment (or the ledger, read whole) event by
// event.
type segReader struct {
	path string
	f    *os.File
	lr   *wire.LineReader
	mem  []settled // the segment's events, sorted, when it was read whole
	ev   *wire.Event
}

func (s *segReader) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// next reads the following event into ev (nil at the end). Segments are
// written whole (temp file, rename), so a torn tail is damage too: any line
// that is not an event is a *CorruptError. A segment in order is streamed:
// an event not after the one before it means the file changed under the
// reader, and is damage.
func (s *segReader) next() error {
	if s.lr == nil {
		if len(s.mem) == 0 {
			s.ev = nil
			return nil
		}
		s.ev, s.mem = s.mem[0].e, s.mem[1:]
		return nil
	}
	prev := s.ev
	e, l, torn, err := s.lr.Event()
	if err == io.EOF {
		s.ev = nil
		return nil
	}
	if torn != nil {
		return s.lr.Corrupt(&l, fmt.Errorf("%w: %s in an archive segment, which is written whole", wire.ErrFraming, torn.Reason))
	}
	if err != nil {
		return err
	}
	if prev != nil && !prev.Before(e) {
		return s.lr.Corrupt(&l, fmt.Errorf("event %s is not after event %s: the segment changed while it was read", e.ID, prev.ID))
	}
	s.ev = e
	return nil
}

type segHeap []*segReader

func (h segHeap) Len() int           { return len(h) }
func (h segHeap) Less(i, j int) bool { return h[i].ev.Before(h[j].ev) }
func (h segHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *segHeap) Push(x any)        { *h = append(*h, x.(*segReader)) }
func (h *segHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
