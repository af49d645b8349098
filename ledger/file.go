package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File names inside a backlog directory.
const (
	LedgerFile = "ledger.jsonl"
	BrokenFile = LedgerFile + ".broken"
	ConfigFile = "config.json"
	LockFile   = "lock"
	IgnoreFile = ".gitignore"
)

// TornTail describes damaged bytes at the end of the ledger that were never
// acknowledged: an unterminated line, or a final line that fails its check.
type TornTail struct {
	Line   int    `json:"line"`   // 1-based line number where the tail starts
	Offset int64  `json:"offset"` // byte offset where the tail starts
	Bytes  int64  `json:"bytes"`  // how many bytes it spans
	Reason string `json:"reason"`
}

// position is how far a reader has folded a ledger file.
type position struct {
	info   os.FileInfo // identity of the file read, to notice replacement
	offset int64       // bytes folded
	lines  int         // lines folded
	last   *Event      // last event folded, for the ordering check
	// snap is the snapshot's newest event while no ledger line has been
	// folded yet: a first line not after it means the ledger and the
	// snapshot disagree (errStale), not that the file is damaged.
	snap *Event
	// base is where the ledger's own events start: past the prefix a
	// compaction cut short left behind, which the snapshot already holds.
	base         int64
	coveredLines int // lines before base
	// file is the ledger being read, kept open between reads: filesystems
	// reuse a freed inode number at once, so only an open file's identity
	// can be compared with whatever the path names now.
	file *os.File
}

// close releases the ledger file a position holds.
func (pos *position) close() {
	if pos.file != nil {
		pos.file.Close()
		pos.file = nil
	}
}

// maxLine bounds one ledger line; anything longer is damage.
const maxLine = 1 << 20

// readFrom folds the complete, valid lines of the ledger at path from pos
// into apply, returning the new position and any torn tail after it. A
// damaged line followed by a good one is a *CorruptError.
//
// The first call opens the file and keeps it in the returned position; the
// caller closes it (position.close) when it drops the position. Later calls
// read the same open file and report errReplaced once the path names
// another file or the file shrank below what was read.
func readFrom(path string, pos position, apply func(*Event)) (position, *TornTail, error) {
	if pos.file == nil {
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return pos, nil, Errorf(ErrNotInitialized, "%s is missing", path)
			}
			return pos, nil, err
		}
		pos.file = f
	} else {
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
	size := min(max(info.Size()-pos.offset, 4096), 256<<10)
	r := bufio.NewReaderSize(io.NewSectionReader(pos.file, pos.offset, 1<<62), int(size))
	for {
		line, err := readLine(r)
		if len(line) == 0 && err == io.EOF {
			return pos, nil, nil
		}
		if err != nil && err != io.EOF {
			return pos, nil, err
		}
		if line[len(line)-1] != '\n' && err == nil {
			// Cut short at maxLine with more bytes after it: damage, not
			// an append in progress.
			derr := fmt.Errorf("%w: line longer than %d bytes", errFraming, maxLine)
			if goodLineFollows(r) {
				return pos, nil, &CorruptError{Path: path, Line: pos.lines + 1, Offset: pos.offset, Err: derr}
			}
			return pos, &TornTail{Line: pos.lines + 1, Offset: pos.offset, Bytes: info.Size() - pos.offset, Reason: derr.Error()}, nil
		}
		if line[len(line)-1] != '\n' {
			rest, _ := io.Copy(io.Discard, r)
			return pos, &TornTail{Line: pos.lines + 1, Offset: pos.offset, Bytes: int64(len(line)) + rest, Reason: "unterminated final line"}, nil
		}
		e, derr := DecodeLine(line)
		if derr == nil && pos.last != nil && pos.last == pos.snap && !pos.last.before(e) {
			return pos, nil, errStale
		}
		if derr == nil && pos.last != nil && !pos.last.before(e) {
			derr = fmt.Errorf("event %s at %s is not after the previous event %s at %s (duplicated or misordered line)",
				e.ID, e.At.Format(timeLayout), pos.last.ID, pos.last.At.Format(timeLayout))
			return pos, nil, &CorruptError{Path: path, Line: pos.lines + 1, Offset: pos.offset, Err: derr}
		}
		if derr != nil {
			if errors.Is(derr, ErrVersion) || goodLineFollows(r) {
				return pos, nil, &CorruptError{Path: path, Line: pos.lines + 1, Offset: pos.offset, Err: derr}
			}
			return pos, &TornTail{Line: pos.lines + 1, Offset: pos.offset, Bytes: info.Size() - pos.offset, Reason: derr.Error()}, nil
		}
		apply(e)
		pos.offset += int64(len(line))
		pos.lines++
		pos.last = e
	}
}

var (
	errReplaced = errors.New("ledger file was replaced")
	// errStale: the ledger holds events the snapshot should come after,
	// or the archive set changed; a git merge does this. The backlog is
	// normalized under the lock (normalize) and loaded again.
	errStale = errors.New("snapshot is stale")
)

const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// readLine returns the next line with its newline, or the unterminated rest
// of the file with io.EOF. Lines longer than maxLine are returned cut short,
// without a newline, so they read as damage.
func readLine(r *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			if len(long) > maxLine {
				return long, nil
			}
			continue
		}
		if long != nil {
			return append(long, chunk...), err
		}
		return chunk, err
	}
}

// goodLineFollows reports whether any line after the reader's position is a
// valid event, which makes earlier damage mid-file rather than a torn tail.
func goodLineFollows(r *bufio.Reader) bool {
	for {
		line, err := readLine(r)
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if _, derr := DecodeLine(line); derr == nil {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// setAside appends the torn tail to the .broken file, fsyncs it, then
// truncates the ledger to the last good line. The caller holds the lock.
func setAside(dir string, t *TornTail) error {
	path := filepath.Join(dir, LedgerFile)
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
	if err := appendSync(filepath.Join(dir, BrokenFile), tail); err != nil {
		return fmt.Errorf("set aside torn tail of %s: %w", path, err)
	}
	if err := f.Truncate(t.Offset); err != nil {
		return fmt.Errorf("truncate torn tail of %s: %w", path, err)
	}
	return f.Sync()
}

// appendSync appends b to path in one write and fsyncs it.
func appendSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs a directory so a created or renamed entry is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
