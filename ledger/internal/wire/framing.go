package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// This file holds the one reader of framed files (ledger.jsonl,
// snapshot.json, archive/*.jsonl) and the one rule that says what each of
// their lines is; see "Line framing" and "Recovery" in doc.go. Every caller
// reads through LineReader and judge and only chooses a policy for what
// judge finds: a reader without the lock stops quietly at a torn tail (an
// append may be in progress), a writer under the lock sets it aside, files
// written whole (archives, the snapshot, git's copies) report it.

// MaxLine bounds one framed line; anything longer is never written, so a
// longer line is damage (or, unterminated at the end, a torn tail).
const MaxLine = 1 << 20

// ErrBlank is the damage of an empty line: it holds no event, so repair may
// drop it.
var ErrBlank = errors.New("blank line")

// FrameLine is one line of a framed file as LineReader found it.
type FrameLine struct {
	N     int    // 1-based line number
	Off   int64  // byte offset of its first byte
	Size  int64  // bytes it spans, line end included
	Raw   []byte // its bytes, line end included; valid until the next read (a long line keeps only its first bytes)
	Body  []byte // raw without its line end ("\n", "\r\n", or a final '\r'): what the checksum covers
	Ended bool   // it ends in "\n" or "\r\n"; only a file's last line can lack a line end
	long  bool   // longer than MaxLine
	nul   bool   // holds a NUL byte
}

// LineReader reads a framed file line by line from an offset. It never
// judges a line; judge does.
type LineReader struct {
	path string
	src  io.ReaderAt
	r    *bufio.Reader
	Off  int64  // where the next line starts
	N    int    // lines read so far (line numbers continue from it)
	Bare bool   // the last line read had no line end
	long []byte // scratch for lines longer than the buffer
	// Consumed, when set, is given every byte the reader takes in, in
	// file order: what the lines read so far were made of.
	Consumed func([]byte)
}

// LineStart is where a line reader starts: at byte off, where line n+1
// starts; bare says the line before off lacked its line end (see
// LineReader.next). The zero LineStart is the start of a file.
type LineStart struct {
	Off  int64
	N    int
	Bare bool
}

// The read buffers of line readers: a file read through, a segment among
// many (several may be open at once), and the look past one line.
const (
	FileBufSize    = 256 << 10
	SegmentBufSize = 64 << 10
	peekBufSize    = 16 << 10
	MinBufSize     = 4 << 10
)

// NewLineReader reads src from at; size is the read buffer, at least
// MinBufSize.
func NewLineReader(path string, src io.ReaderAt, at LineStart, size int) *LineReader {
	return &LineReader{path: path, src: src, Off: at.Off, N: at.N, Bare: at.Bare,
		r: bufio.NewReaderSize(io.NewSectionReader(src, at.Off, 1<<62), max(size, MinBufSize))}
}

// EndsBare reports whether the byte before off is not a newline, i.e. a
// reader resuming at off follows a line that has no line end yet.
func EndsBare(src io.ReaderAt, off int64) (bool, error) {
	if off == 0 {
		return false, nil
	}
	var b [1]byte
	if _, err := src.ReadAt(b[:], off-1); err == io.EOF {
		// Cut back below off (a failed append taken back): nothing
		// to read there, and the caller sees the file shrank.
		return false, nil
	} else if err != nil {
		return false, err
	}
	return b[0] != '\n', nil
}

// next returns the next line, or io.EOF at the end of the file. A final
// line without a line end that was read as an event may get its newline
// later (a writer restoring it, or an append finishing while a reader
// looked): a line end alone right after such a line finishes it rather than
// being read as a blank line.
func (lr *LineReader) next() (FrameLine, error) {
	l, err := lr.read()
	if err == nil && lr.Bare && l.Ended && len(l.Body) == 0 {
		lr.N--
		lr.Bare = false
		l, err = lr.read()
	}
	if err == nil {
		lr.Bare = !l.Ended
	}
	return l, err
}

// read reads one line as it is.
func (lr *LineReader) read() (FrameLine, error) {
	l := FrameLine{Off: lr.Off}
	chunk, err := lr.r.ReadSlice('\n')
	lr.consumed(chunk)
	size := int64(len(chunk))
	cut := false // chunk holds only the line's first bytes
	if err == bufio.ErrBufferFull {
		// Longer than the buffer: gather it, keeping at most about
		// MaxLine bytes but reading (and checking) all of it.
		lr.long = append(lr.long[:0], chunk...)
		for err == bufio.ErrBufferFull {
			chunk, err = lr.r.ReadSlice('\n')
			lr.consumed(chunk)
			size += int64(len(chunk))
			if len(lr.long) <= MaxLine {
				lr.long = append(lr.long, chunk...)
			} else {
				cut = true
				l.nul = l.nul || bytes.IndexByte(chunk, 0) >= 0
			}
		}
		chunk = lr.long
	}
	if err != nil && err != io.EOF {
		return l, err
	}
	if size == 0 {
		return l, io.EOF
	}
	lr.N++
	lr.Off += size
	l.N, l.Size, l.Raw, l.Ended = lr.N, size, chunk, err == nil
	l.Body = chunk
	if !cut {
		l.Body = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte{'\n'}), []byte{'\r'})
	}
	l.long = cut || len(l.Body) > MaxLine
	l.nul = l.nul || bytes.IndexByte(chunk, 0) >= 0
	return l, nil
}

func (lr *LineReader) consumed(b []byte) {
	if lr.Consumed != nil && len(b) > 0 {
		lr.Consumed(b)
	}
}

// tornReason says why a line cannot be a finished append, or "" when it
// can be one. An append writes one whole line with its newline in one
// write, so what a crash leaves is a prefix of it (no line end and no valid
// frame) or, where the disk never got the data, NUL bytes. A complete line,
// or an unterminated one whose frame holds, is something a writer finished.
func (l *FrameLine) tornReason() string {
	switch {
	case l.nul:
		return "NUL bytes where a line should be: a write the disk never finished"
	case l.Ended:
		return ""
	case l.long:
		return fmt.Sprintf("unterminated final line longer than %d bytes", MaxLine)
	}
	if _, err := CheckFrame(l.Body); err != nil {
		return "unterminated final line"
	}
	return ""
}

// judge is the classifier: it says what l is. A good line, one that is
// complete and whose frame and content hold (decode, given the line
// without its line end, accepted it), gives nil, nil. A line that cannot be
// a finished append, with nothing after it but more such lines, is a torn
// tail: judge
// returns it as a *TornTail spanning to the end of the file. Anything else
// is damage: a *CorruptError naming the file, line and offset. That covers a
// complete line that fails its checksum or holds no event (even the last
// line of the file), a line from a newer format (ErrVersion), a blank line,
// a line longer than MaxLine, and torn bytes with any other line after them.
//
// judge reads ahead through src only to decide a torn tail; lr is left
// just after l either way, so a caller that reports every line can go on.
func (lr *LineReader) judge(l *FrameLine, decode func(raw []byte) error) (*TornTail, error) {
	if why := l.tornReason(); why != "" {
		end, torn, err := lr.tornAfter(l)
		if err != nil {
			return nil, err
		}
		if torn {
			return &TornTail{Line: l.N, Offset: l.Off, Bytes: end - l.Off, Reason: why}, nil
		}
		if !l.Ended {
			// The read met the end of the file just after l, yet lines
			// follow it now: the file grew while it was read. A reader
			// without the lock sees an append's bytes as they land, so l
			// is a line a writer was still making, not damage. The read
			// ends before it, as at a torn tail; the next read sees it
			// whole.
			return &TornTail{Line: l.N, Offset: l.Off, Bytes: l.Size, Reason: "an append in progress", Growing: true}, nil
		}
		return nil, lr.Corrupt(l, fmt.Errorf("%w: %s, with more lines after it", ErrFraming, why))
	}
	var err error
	switch {
	case l.long:
		err = fmt.Errorf("%w: line longer than %d bytes", ErrFraming, MaxLine)
	case len(l.Body) == 0:
		err = ErrBlank
	default:
		err = decode(l.Body)
	}
	if err != nil {
		return nil, lr.Corrupt(l, err)
	}
	return nil, nil
}

// tornAfter reports whether every line after l cannot be a finished append
// either, and where the file ends.
func (lr *LineReader) tornAfter(l *FrameLine) (end int64, torn bool, err error) {
	rest := NewLineReader(lr.path, lr.src, LineStart{Off: l.Off + l.Size, N: l.N}, peekBufSize)
	for {
		m, err := rest.read()
		if err == io.EOF {
			return rest.Off, true, nil
		}
		if err != nil {
			return 0, false, err
		}
		if m.tornReason() == "" {
			return 0, false, nil
		}
	}
}

func (lr *LineReader) Corrupt(l *FrameLine, err error) *CorruptError {
	return &CorruptError{Path: lr.path, Line: l.N, Offset: l.Off, Err: err}
}

// NextJudged reads the next line and judges it (see judge), decode seeing
// the line without its line end while lr.n is its number: the line, and a
// torn tail (the reader is then done) or a *CorruptError; io.EOF at the
// end.
func (lr *LineReader) NextJudged(decode func(raw []byte) error) (FrameLine, *TornTail, error) {
	l, err := lr.next()
	if err != nil {
		return l, nil, err
	}
	torn, err := lr.judge(&l, decode)
	return l, torn, err
}

// event reads the next line as a ledger or archive event: the event, or a
// torn tail (the reader is then done), or a *CorruptError, or io.EOF at the
// end. l is the line read, for its number and offsets.
func (lr *LineReader) Event() (e *Event, l FrameLine, torn *TornTail, err error) {
	l, torn, err = lr.NextJudged(func(raw []byte) (err error) {
		e, err = DecodeLine(raw)
		return err
	})
	if err != nil && ConflictMarker(l.Body) {
		err = lr.Corrupt(&l, MarkerError(l.Body))
	}
	if torn != nil || err != nil {
		return nil, l, torn, err
	}
	return e, l, nil, nil
}

// ReadEventsData decodes every line of an in-memory ledger or archive in
// file order, up to a torn tail, and returns the events with the offset
// where the good lines end (len(data) without a torn tail). Damage is a
// *CorruptError.
func ReadEventsData(path string, data []byte) ([]*Event, int64, *TornTail, error) {
	lr := NewLineReader(path, bytes.NewReader(data), LineStart{}, min(len(data), FileBufSize))
	var out []*Event
	for {
		e, _, torn, err := lr.Event()
		if err == io.EOF {
			return out, int64(len(data)), nil, nil
		}
		if torn != nil {
			return out, torn.Offset, torn, nil
		}
		if err != nil {
			return nil, 0, nil, err
		}
		out = append(out, e)
	}
}

// ErrConflictMarkers is the damage of a line git wrote around the two
// sides of a conflict: a merge made before the backlog had its
// .gitattributes (merge=union). Repair drops such lines and keeps the
// events between them.
var ErrConflictMarkers = errors.New("git conflict markers")

// ConflictMarker reports whether a line is one of git's conflict markers:
// seven '<', '|', '=' or '>', alone or followed by a space.
func ConflictMarker(body []byte) bool {
	if len(body) < 7 || (len(body) > 7 && body[7] != ' ') {
		return false
	}
	switch c := body[0]; c {
	case '<', '|', '=', '>':
		return bytes.Count(body[:7], []byte{c}) == 7
	}
	return false
}

func MarkerError(body []byte) error {
	return fmt.Errorf("%w (%.24q) from a git merge made without the union rule of .backlog/.gitattributes: run bl doctor --repair, which keeps every event between the markers and drops them",
		ErrConflictMarkers, body)
}
