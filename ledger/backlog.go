package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/bl-backlog/bl/lock"
)

// Options tune a Backlog. The zero value is ready to use.
type Options struct {
	// Clock returns the current time; time.Now when nil. Tests inject a
	// fake clock here; the fold itself never reads it.
	Clock func() time.Time
	// LockTimeout bounds the wait for the writers' lock; 10s when zero.
	LockTimeout time.Duration
	// Failpoint, when set, is called at named points of the append path
	// ("before-write", "after-write", "after-fsync") so crash tests can
	// kill the process exactly there.
	Failpoint func(stage string)
	// AllowNetworkFS opens a backlog on NFS, CIFS/SMB or AFS, where locks
	// and appends are not atomic across machines. Only safe when every
	// writer runs on one machine.
	AllowNetworkFS bool
	// Warn, when set, is told of things a person should know that do not
	// fail the call: a torn tail set aside, events stamped ahead of this
	// machine's clock. Each message is one line without a newline.
	Warn func(msg string)
	// Appended, when set, is given the events of each write once they
	// are durable and folded. It is called under the writers' lock, so it
	// must only record them (hooks run them after the call returns).
	Appended func(events []*Event)
}

// DefaultLockTimeout is how long a writer waits for the lock by default.
const DefaultLockTimeout = 10 * time.Second

// Backlog is an open backlog directory. Its methods are safe for concurrent
// use; separate Backlog values on one directory, in one process or many,
// coordinate through the lock file.
type Backlog struct {
	dir  string
	opts Options
	lk   *lock.File

	mu    sync.Mutex
	state *State
	seq   int // compactions folded into the snapshot the state started from
	pos   position
	torn  *TornTail // damaged tail seen by the last read, if any
	cfg   Config

	snapEvents int64           // events folded into the snapshot the state started from
	snapInfo   os.FileInfo     // that snapshot file; nil when there was none
	compactErr error           // the last automatic compaction's failure, if any
	holding    bool            // this handle holds the writers' lock (under mu)
	stale      bool            // the state is not the fold of the files (a fold stopped): reload before use
	normalForm bool            // the files disagree and the state is their normal form, folded in memory
	warned     map[string]bool // messages already passed to Options.Warn (under mu)
}

// Mutation is what every write request carries.
type Mutation struct {
	Actor     string // who is writing; required
	RequestID string // makes the request idempotent when set

	// What a replay of RequestID must match, set by each request type
	// (see request.go).
	card  string
	title *string
}

// Open opens the backlog in dir (the directory holding ledger.jsonl) and
// folds its ledger. It takes no lock: a torn tail is left for the next
// writer, and only damage mid-file is an error.
func Open(dir string, opts Options) (*Backlog, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if err := CheckLinks(dir); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(dir, LedgerFile)); err != nil || !fi.Mode().IsRegular() {
		return nil, Errorf(ErrNotInitialized, "%s has no %s; run bl init", dir, LedgerFile)
	}
	if !opts.AllowNetworkFS {
		if err := checkLocalFS(dir); err != nil {
			return nil, err
		}
	}
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	b := &Backlog{dir: dir, opts: opts, cfg: cfg, lk: lock.New(filepath.Join(dir, LockFile))}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// Dir is the backlog directory.
func (b *Backlog) Dir() string { return b.dir }

// reload loads the snapshot and folds the whole ledger after it. A
// compaction can replace both files while this runs; it renames the
// snapshot first, so a snapshot that changed while the ledger was read
// means the pair may not match, and the load starts over.
func (b *Backlog) reload() error {
	if pendingJournal(b.dir) && !b.holding {
		// A multi-file change was decided but not finished: finish it
		// under the lock before reading anything. A reader that cannot
		// (a full disk, a read-only directory) reads what is there: the
		// files of a change half made fold, in their normal form, to the
		// same state (see loadNormalForm).
		if err := b.lk.Acquire(context.Background(), b.opts.LockTimeout); err == nil {
			err = rollForward(b.dir)
			b.lk.Release()
			if err != nil {
				b.warn(fmt.Sprintf("could not finish the change journaled in %s (%v); reading the files as they are", filepath.Join(b.dir, stagingDir), err))
			}
		}
	}
	sorted := false // fold the ledger sorted (readSorted): its lines are out of order
	for attempt := 0; ; attempt++ {
		done, err := b.loadOnce(sorted)
		if errors.Is(err, errUnsorted) && !sorted {
			sorted, done, err = true, false, nil
		}
		if err != nil || done {
			return err
		}
		if attempt == 100 {
			return fmt.Errorf("ledger: %s keeps changing while loading; is a compaction looping?", b.dir)
		}
	}
}

// catchUp folds whatever was appended since the last read. A replaced file
// (compaction, merge) is folded again from the start.
func (b *Backlog) catchUp() error {
	if b.stale || b.snapshotMoved() {
		return b.reload()
	}
	fold, failed := foldInto(b.state)
	pos, torn, err := readFrom(filepath.Join(b.dir, LedgerFile), b.pos, fold)
	if errors.Is(err, errReplaced) {
		return b.reload()
	}
	if errors.Is(err, errStale) || errors.Is(err, errUnsorted) {
		return b.reload()
	}
	if ferr := failed(); ferr != nil {
		// The fold stopped at an event it could not check: the state is
		// no longer the fold of the file. Load it again on the next call.
		b.stale = true
		return ferr
	}
	// pos covers exactly the events applied, even when reading stopped at
	// damage, so the next catch-up neither skips nor repeats one.
	b.pos, b.torn = pos, torn
	return err
}

// foldInto returns the function that folds ledger events into s, and one
// that reports the first event it could not fold because a snapshot line
// it needed does not read; after that it folds nothing more.
func foldInto(s *State) (fold func(*Event), failed func() error) {
	var ferr error
	fold = func(e *Event) {
		if ferr != nil {
			return
		}
		_, ferr = s.fold(e) // a conflict is recorded in s
	}
	return fold, func() error { return ferr }
}

// snapshotMoved reports whether snapshot.json is no longer the file the
// state was loaded from: a sync or a git pull can replace it and leave an
// unchanged ledger alone. Size and mtime are compared too, as a closed
// file's inode number may be reused at once.
func (b *Backlog) snapshotMoved() bool {
	fi, err := os.Stat(filepath.Join(b.dir, SnapshotFile))
	if b.snapInfo == nil {
		return err == nil
	}
	return err != nil || !os.SameFile(fi, b.snapInfo) || fi.Size() != b.snapInfo.Size() || !fi.ModTime().Equal(b.snapInfo.ModTime())
}

// catchUpForWrite catches up under the lock, where no append can be in
// progress, and settles the end of the ledger (settleTail).
func (b *Backlog) catchUpForWrite() error {
	// Finish a decided multi-file change, or drop an undecided one.
	if err := rollForward(b.dir); err != nil {
		return err
	}
	if b.normalForm {
		b.stale = true // under the lock: try to rewrite the files (loadOnce)
	}
	if err := b.catchUp(); err != nil {
		return err
	}
	return b.settleTail()
}

// refresh brings the state up to date for a read.
func (b *Backlog) refresh() error {
	return b.catchUp()
}

// TornTail reports damaged bytes at the end of the ledger as of the last
// read; nil when the ledger ends cleanly.
func (b *Backlog) TornTail() *TornTail {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.torn == nil {
		return nil
	}
	t := *b.torn
	return &t
}

// View runs fn on an up-to-date state. fn must not keep the state. A
// snapshot line the state fails to read while fn runs ends fn and is
// returned.
func (b *Backlog) View(fn func(s *State, now time.Time) error) (err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer returnFailure(&err)
	if err := b.refresh(); err != nil {
		return err
	}
	return fn(b.state, b.opts.Clock().UTC())
}

// write is the append path: lock, catch up (setting aside a torn tail),
// replay check, build, validate, one write, fsync, apply, unlock. build sees
// the current state and the time the events will carry; it returns the
// events to append, or none. The result holds the card each event touched,
// as it stands after the write, or for a replay the card the request touched.
func (b *Backlog) write(ctx context.Context, m Mutation, op Op, build func(s *State, at time.Time) ([]*Event, error)) (cards []Card, err error) {
	if m.Actor == "" {
		return nil, rule(ErrInvalid, "an actor is required")
	}
	err = b.withLock(ctx, func() error {
		cards, err = b.writeLocked(m, op, build)
		return err
	})
	return cards, err
}

// withLock runs fn holding the writers' lock, caught up with the ledger
// (and with any torn tail set aside). An error releasing the lock is not
// reported: fn's writes are durable by then, and closing the file drops
// the lock anyway.
func (b *Backlog) withLock(ctx context.Context, fn func() error) (err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lk.Acquire(ctx, b.opts.LockTimeout); err != nil {
		return err
	}
	b.holding = true
	defer func() {
		b.holding = false
		_ = b.lk.Release()
	}()
	defer returnFailure(&err) // a snapshot line fn needed does not read
	if err := b.catchUpForWrite(); err != nil {
		return err
	}
	return fn()
}

func (b *Backlog) writeLocked(m Mutation, op Op, build func(s *State, at time.Time) ([]*Event, error)) ([]Card, error) {
	if m.RequestID != "" {
		if r, ok := b.state.Receipt(m.RequestID); ok {
			c, _ := b.state.Card(r.Card)
			if err := m.replayOf(op, r, c); err != nil {
				return nil, err
			}
			// A replayed claim answers with the lease it took; if that
			// lease has ended since, the caller must not work on the card.
			if r.Op == OpClaim && (c.Status != StatusClaimed || c.ClaimEpoch != r.Epoch) {
				return nil, rule(ErrFenced, "request %q claimed %s at epoch %d, but that lease has ended (the card is %s at epoch %d); claim again", m.RequestID, r.Card, r.Epoch, c.Status, c.ClaimEpoch)
			}
			return []Card{c}, nil
		}
	}
	now := b.opts.Clock().UTC()
	at := now
	if last := b.state.Last(); !last.At.IsZero() && !at.After(last.At) {
		at = last.At.Add(time.Nanosecond)
	}
	// Decide by this clock, not by a stamp an earlier fast clock pushed
	// ahead: the events then carry the clock (see MaxClockSkew).
	clock, decide := b.stampClock(at, now), at
	if clock != nil {
		decide = *clock
	}
	events, err := build(b.state, decide)
	if err != nil || len(events) == 0 {
		return nil, err
	}
	var buf []byte
	for i, e := range events {
		e.ID, e.At, e.Clock, e.Actor, e.RequestID = newEventID(), at.Add(time.Duration(i)), clock, m.Actor, m.RequestID
		e.V = e.lineVersion()
		if err := validUTF8(e); err != nil {
			return nil, err
		}
		line, err := EncodeLine(e)
		if err != nil {
			return nil, err
		}
		if len(line) > maxLine {
			// Readers treat a longer line as damage; never write one.
			return nil, rule(ErrInvalid, "%s of %s would make a %d-byte ledger line; the limit is %d bytes", e.Op, e.Card, len(line), maxLine)
		}
		// Check and apply the event as every reader will decode it (JSON
		// turns a nil list into null and invalid UTF-8 into U+FFFD), so the
		// state reported here is the fold of the file.
		if e, err = DecodeLine(line); err != nil {
			return nil, fmt.Errorf("ledger: %s of %s does not read back: %w", events[i].Op, events[i].Card, err)
		}
		if err := b.state.Check(e); err != nil {
			return nil, err
		}
		events[i] = e
		buf = append(buf, line...)
	}
	if err := b.appendDurably(buf); err != nil {
		return nil, err
	}
	for _, e := range events {
		if err := b.state.Apply(e); err != nil {
			// Check passed a moment ago under the same lock: this is a bug.
			return nil, fmt.Errorf("ledger: applying %s of %s after check: %w", e.Op, e.Card, err)
		}
		b.pos.last = e
		b.pos.seen(e.ID)
	}
	b.pos.offset += int64(len(buf))
	b.pos.lines += len(events)
	if b.opts.Appended != nil {
		b.opts.Appended(events)
	}
	cards := make([]Card, len(events))
	for i, e := range events {
		cards[i], _ = b.state.Card(e.Card)
	}
	b.maybeCompact()
	return cards, nil
}

// appendDurably writes buf at the end of the ledger in one write and fsyncs
// it. A failed write is truncated away so no partial line stays behind.
func (b *Backlog) appendDurably(buf []byte) error {
	path := filepath.Join(b.dir, LedgerFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, b.pos.info) || fi.Size() != b.pos.offset {
		return fmt.Errorf("ledger: %s changed under the lock; retry", path)
	}
	b.failpoint("before-write")
	if n, err := f.Write(buf); err != nil || n != len(buf) {
		_ = f.Truncate(b.pos.offset)
		return fmt.Errorf("append to %s: %w", path, errors.Join(err, errShortWrite(n, len(buf))))
	}
	b.failpoint("after-write")
	if err := fdatasync(f); err != nil {
		_ = f.Truncate(b.pos.offset)
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	b.failpoint("after-fsync")
	return nil
}

func errShortWrite(n, want int) error {
	if n == want {
		return nil
	}
	return fmt.Errorf("short write: %d of %d bytes", n, want)
}

// warn passes msg to Options.Warn, once per message per handle.
func (b *Backlog) warn(msg string) {
	if b.opts.Warn == nil || b.warned[msg] {
		return
	}
	if b.warned == nil {
		b.warned = map[string]bool{}
	}
	b.warned[msg] = true
	b.opts.Warn(msg)
}

func (b *Backlog) failpoint(stage string) {
	if b.opts.Failpoint != nil {
		b.opts.Failpoint(stage)
	}
}

// Close releases the open ledger file. The lock is only ever held inside a
// call.
func (b *Backlog) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pos.close()
	b.state.release()
	return nil
}

// loadOnce loads the snapshot and the ledger after it. done is false when
// the pair changed underneath (a compaction or normalization ran) and the
// load must start over.
func (b *Backlog) loadOnce(sorted bool) (done bool, err error) {
	s, hdr, snapFile, err := openSnapshotIndexed(b.dir)
	if errors.Is(err, errStale) { // a union of two snapshots
		return b.loadStale()
	}
	if err != nil {
		return false, err
	}
	var info os.FileInfo
	if snapFile != nil {
		if s.src == nil {
			defer snapFile.Close()
		}
		if info, err = snapFile.Stat(); err != nil {
			s.release()
			return false, err
		}
	}
	snapEvents := s.Events()
	snapshotChanged := func() bool {
		now, serr := os.Stat(filepath.Join(b.dir, SnapshotFile))
		return !((info == nil && errors.Is(serr, os.ErrNotExist)) || (info != nil && serr == nil && os.SameFile(info, now)))
	}
	pos, err := snapshotPosition(b.dir, s, hdr)
	var torn *TornTail
	if err == nil {
		fold, failed := foldInto(s)
		read := readFrom
		if sorted {
			read = readSorted
		}
		pos, torn, err = read(filepath.Join(b.dir, LedgerFile), pos, fold)
		if ferr := failed(); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil || snapshotChanged() {
		pos.close()
		s.release()
	}
	switch {
	case snapshotChanged():
		// A compaction ran meanwhile; what looked stale or replaced may
		// just be its new files. Load again.
		return false, nil
	case errors.Is(err, errStale):
		return b.loadStale()
	case errors.Is(err, errReplaced):
		return false, nil
	case err != nil:
		return false, err
	}
	b.pos.close()
	b.state.release()
	b.state, b.seq, b.pos, b.torn, b.snapEvents = s, hdr.Seq, pos, torn, snapEvents
	b.stale, b.normalForm = false, false
	b.snapInfo = info
	return true, nil
}

// loadStale loads a backlog whose files disagree. A writer rewrites the
// files into their normal form and loads them again. When it cannot (a
// full disk), it goes on from the normal form in memory, as a reader does.
func (b *Backlog) loadStale() (done bool, err error) {
	if b.holding {
		torn, nerr := normalize(b.dir)
		if torn != nil {
			b.warn(setAsideMessage(b.dir, torn))
		}
		if nerr == nil {
			return false, nil
		}
		b.warn(fmt.Sprintf("could not rewrite %s into its normal form (%v); working from memory", b.dir, nerr))
	}
	return b.loadNormalForm()
}

// snapshotPosition is where folding the ledger starts after the snapshot:
// after the ledger prefix a compaction cut short left (recognised by
// length and checksum), with the snapshot's newest event as the one every
// ledger event must come after. An archive set other than the one the
// snapshot folded is errStale, unless the only difference is the segment
// a compaction that did not finish left behind (leftoverSegment).
func snapshotPosition(dir string, s *State, hdr snapshotHeader) (position, error) {
	var pos position
	if last := s.Last(); last.ID != "" {
		pos.last, pos.snap = &last, &last
	}
	covered, lines, err := coveredPrefix(dir, hdr)
	if err != nil {
		return pos, err
	}
	pos.offset, pos.base, pos.lines, pos.coveredLines = covered, covered, lines, lines
	names, err := archiveNames(dir)
	if err != nil {
		return pos, err
	}
	if !namesMatch(names, hdr) && leftoverSegment(dir, names, hdr, covered) == "" {
		return pos, errStale
	}
	return pos, nil
}

// namesMatch reports whether names are the archive segments the snapshot
// with this header folded.
func namesMatch(names []string, hdr snapshotHeader) bool {
	if hdr.V == 0 { // no snapshot
		return len(names) == 0
	}
	return archiveFingerprint(names) == hdr.Archives
}

// coveredPrefix is the length and line count of the ledger prefix the
// snapshot already folded: what a compaction that wrote its snapshot but
// could not empty the ledger left. Zero when the ledger does not start
// with exactly those bytes.
func coveredPrefix(dir string, hdr snapshotHeader) (int64, int, error) {
	if hdr.TailBytes <= 0 {
		return 0, 0, nil
	}
	f, err := os.Open(filepath.Join(dir, LedgerFile))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	// Only a ledger at least that long can start with the prefix; check
	// before reading it, as it can be hundreds of MB.
	if fi, err := f.Stat(); err != nil || fi.Size() < hdr.TailBytes {
		return 0, 0, err
	}
	prefix := make([]byte, hdr.TailBytes)
	if n, _ := io.ReadFull(f, prefix); int64(n) == hdr.TailBytes && crcHex(prefix) == hdr.TailCRC {
		return hdr.TailBytes, bytes.Count(prefix, []byte{'\n'}), nil
	}
	return 0, 0, nil
}

// leftoverSegment returns the archive segment a compaction that did not
// finish wrote before its snapshot: the one name the snapshot does not
// fold, whose bytes are exactly the ledger's after the covered prefix. Every
// event in it is still in the ledger, so a load ignores it and the next
// compaction removes it. "" when names hold no such segment.
func leftoverSegment(dir string, names []string, hdr snapshotHeader, covered int64) string {
	for i, name := range names {
		if !namesMatch(slices.Delete(slices.Clone(names), i, i+1), hdr) {
			continue
		}
		seg, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || len(seg) == 0 {
			return ""
		}
		f, err := os.Open(filepath.Join(dir, LedgerFile))
		if err != nil {
			return ""
		}
		defer f.Close()
		led := make([]byte, len(seg))
		if n, _ := f.ReadAt(led, covered); n == len(seg) && bytes.Equal(led, seg) {
			return name
		}
		return ""
	}
	return ""
}

// loadNormalForm loads a backlog whose files disagree (a git merge brought
// in archive segments or ledger lines from elsewhere) as the fold of its
// normal form (normalTree), computed in memory: the state the next writer
// that rewrites the files will see. Nothing is written. done is false when
// a compaction or a normalization changed the files meanwhile.
func (b *Backlog) loadNormalForm() (done bool, err error) {
	snapPath, path := filepath.Join(b.dir, SnapshotFile), filepath.Join(b.dir, LedgerFile)
	snapInfo, serr := os.Stat(snapPath)
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, info.Size()), data); err != nil {
		return false, err
	}
	t, err := ReadTree(b.dir)
	if err != nil {
		return false, err
	}
	led, end, torn, err := readEventsData(path, data)
	if err != nil {
		return false, err
	}
	// A final event without its line end counts as a line; a writer
	// restores the newline before appending (position.bare).
	lines := bytes.Count(data[:end], []byte{'\n'})
	bare := end > 0 && data[end-1] != '\n'
	if bare {
		lines++
	}
	t[LedgerFile] = data[:end]
	norm, err := normalTree(t, led)
	if err != nil {
		return false, err
	}
	s, err := norm.fold(false)
	if err != nil {
		return false, err
	}
	if now, err := os.Stat(snapPath); (serr == nil) != (err == nil) || (serr == nil && !os.SameFile(snapInfo, now)) {
		return false, nil // a compaction ran meanwhile
	}
	var last *Event
	if l := s.Last(); l.ID != "" {
		last = &l
	}
	keep = true
	b.pos.close()
	b.state.release()
	b.state, b.torn, b.stale, b.normalForm = s, torn, false, true
	b.pos = position{file: f, info: info, offset: end, lines: lines, last: last, bare: bare}
	b.seq = len(norm.archives())
	b.snapEvents = s.Events() - int64(bytes.Count(norm[LedgerFile], []byte{'\n'}))
	b.snapInfo = nil
	if serr == nil {
		b.snapInfo = snapInfo
	}
	return true, nil
}
