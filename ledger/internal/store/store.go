// Package store is a backlog directory's files and the state folded from
// them: reading them (the snapshot and its index, archive segments, the
// ledger), catching up with other writers, the append path (one write, an
// fsync, the fold), compaction, the journal of multi-file changes, config
// and bl init, and the quarantine of lines that arrive through git and do
// not read. Package ledger gives the public API on top of it and adds the
// rules of a write (replays, stages, epics, paths); bl doctor and the
// rebase of a sync round are package repair. The bytes on disk are
// described in package ledger's documentation; neither store nor repair
// imports ledger.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"github.com/bl-backlog/bl/lock"
)

// Options tune a handle (ledger.Options). The zero value is ready to use.
type Options struct {
	// Clock returns the current time; time.Now when nil. Tests inject a
	// fake clock here; the fold itself never reads it.
	Clock func() time.Time
	// LockTimeout bounds the wait for the writers' lock; 10s when zero.
	LockTimeout time.Duration
	// Failpoint, when set, is called at named points of the append path
	// ("before-write", "after-write", "after-fsync") so crash tests can
	// kill the process exactly there; "reload-stat" is ReloadConfig's,
	// between its stat of config.json and its read.
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
	Appended func(events []*wire.Event)
	// Interrupted, when set, is asked during long computations on user
	// text (the overlap of path globs); once it says true they stop and
	// the call fails with context.Canceled, appending nothing. bl passes
	// "a signal came".
	Interrupted func() bool
	// SlowSync is how long an append's fsync may take before Warn is told
	// (the disk is slow, and every writer waits on it): 0 means
	// DefaultSlowSync, a negative value never warns. bl reads it from
	// BL_SLOW_FSYNC.
	SlowSync time.Duration
	// Synced, when set, is given how long each append's fsync took (bl
	// serve's bl_fsync_seconds). It is called under the writers' lock.
	Synced func(d time.Duration)
	// Config, when set, is dir's config.json as the caller read it
	// (ReadConfig) just before: Open takes it instead of reading the file
	// again. bl reads it before opening, to decide whether bl-git runs
	// the command.
	Config *Config
	// LinksChecked: the caller ran CheckLinks on dir just before (bl's
	// discovery of the backlog does), so Open does not again.
	LinksChecked bool
}

// DefaultSlowSync is the fsync time past which an append warns by
// default: an fsync takes milliseconds on a local disk, and a second
// means something is wrong with the disk or the machine (etcd warns past
// one second too).
const DefaultSlowSync = time.Second

// OnAppended returns ctx carrying fn: each write made with it (or a
// context derived from it) gives fn its events once they are durable and
// folded, as Options.Appended does for every write of a handle, under the
// writers' lock. It is how one caller of a shared handle collects its own
// writes (a tool call's hooks) without seeing another caller's.
func OnAppended(ctx context.Context, fn func(events []*wire.Event)) context.Context {
	return context.WithValue(ctx, appendedKey{}, fn)
}

type appendedKey struct{}

// DefaultLockTimeout is how long a writer waits for the lock by default.
const DefaultLockTimeout = 10 * time.Second

// Store is an open backlog directory's files and the state folded from
// them: how a handle loads, catches up, appends and compacts. Its methods
// are safe for concurrent use; separate handles on one directory, in one
// process or many, coordinate through the lock file. The rules of a write
// (replays, stages, epics, path limits) are package ledger's, which hands
// the store encoded lines to append.
type Store struct {
	dir  string
	opts Options
	lk   *lock.File

	mu    sync.Mutex
	state *fold.State
	seq   int // compactions folded into the snapshot the state started from
	pos   Position
	torn  *wire.TornTail // damaged tail seen by the last read, if any
	cfg   Config

	snapEvents int64                // events folded into the snapshot the state started from
	snapInfo   os.FileInfo          // that snapshot file; nil when there was none
	ckptLines  int                  // ledger lines the last tail checkpoint read or written folded
	compactErr error                // the last automatic compaction's failure, if any
	holding    bool                 // this handle holds the writers' lock (under mu)
	stale      bool                 // the state is not the fold of the files (a fold stopped): reload before use
	normalForm bool                 // the files disagree and the state is their normal form, folded in memory
	warned     map[string]bool      // messages already passed to Options.Warn (under mu)
	fsync      func(*os.File) error // Fdatasync; a test makes it slow

	watch configWatch // config.json as ReloadConfig last saw it (config_reload.go)
}

// Open opens the backlog in dir (the directory holding ledger.jsonl) and
// folds its ledger. It takes no lock: a torn tail is left for the next
// writer, and only damage mid-file is an error.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if !opts.LinksChecked {
		if err := CheckLinks(dir); err != nil {
			return nil, err
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, LedgerFile)); err != nil || !fi.Mode().IsRegular() {
		return nil, wire.Errorf(wire.ErrNotInitialized, "%s has no %s; run bl init", dir, LedgerFile)
	}
	if !opts.AllowNetworkFS {
		if err := checkLocalFS(dir); err != nil {
			return nil, err
		}
	}
	cfg, err := openConfig(dir, opts.Config)
	if err != nil {
		return nil, err
	}
	opts.Config = nil // read once: the handle keeps cfg
	b := &Store{dir: dir, opts: opts, cfg: cfg, lk: lock.New(filepath.Join(dir, LockFile)), fsync: Fdatasync}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// Dir is the backlog directory.
func (b *Store) Dir() string { return b.dir }

// TornTail reports damaged bytes at the end of the ledger as of the last
// read; nil when the ledger ends cleanly.
func (b *Store) TornTail() *wire.TornTail {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.torn == nil {
		return nil
	}
	t := *b.torn
	return &t
}

// View runs fn on an up-to-date state, under the handle's mutex. fn must
// not keep the state. A snapshot line the state fails to read while fn runs
// is returned instead of fn's error: whatever fn found is void then (the
// line read as absent).
func (b *Store) View(fn func(s *fold.State, now time.Time) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refresh(); err != nil {
		return err
	}
	err := fn(b.state, b.opts.Clock().UTC())
	if ferr := b.state.TakeFault(); ferr != nil {
		return ferr
	}
	return err
}

// Current runs fn on the state this handle last read or wrote, reading no
// file, under the handle's mutex. fn must not keep the state.
func (b *Store) Current(fn func(s *fold.State, now time.Time) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fn(b.state, b.opts.Clock().UTC())
}

// Locked runs fn holding the writers' lock, caught up with the ledger
// (and with any torn tail set aside), with the state and the time a write
// made now stamps from. An error releasing the lock is not reported: fn's
// writes are durable by then, and closing the file drops the lock anyway.
func (b *Store) Locked(ctx context.Context, fn func(s *fold.State) error) error {
	return b.withLock(ctx, func() error { return fn(b.state) })
}

// withLock is Locked for the store's own calls.
func (b *Store) withLock(ctx context.Context, fn func() error) (err error) {
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
	if err := b.catchUpForWrite(); err != nil {
		return err
	}
	err = fn()
	if ferr := b.state.TakeFault(); ferr != nil && err == nil {
		err = ferr // a lookup outside resolve did not read
	}
	return err
}

// Append appends events, checked against the state in a Locked call, as
// buf (their encoded lines), applies them and returns the cards they
// touched as they stand after.
func (b *Store) Append(ctx context.Context, events []*wire.Event, buf []byte) ([]wire.Card, error) {
	if err := b.appendDurably(buf); err != nil {
		return nil, err
	}
	for _, e := range events {
		if err := b.state.Apply(e); err != nil {
			// Check passed a moment ago under the same lock: this is a bug.
			return nil, fmt.Errorf("ledger: applying %s of %s after check: %w", e.Op, e.Card, err)
		}
	}
	b.advance(events, buf)
	if fn, _ := ctx.Value(appendedKey{}).(func([]*wire.Event)); fn != nil {
		fn(events)
	}
	cards := b.CardsOf(events)
	b.maybeCompact()
	b.maybeCheckpoint()
	return cards, nil
}

// advance moves the read position past events this handle just appended
// (the ledger's bytes buf), so its next read does not read them again, and
// tells Options.Appended.
func (b *Store) advance(events []*wire.Event, buf []byte) {
	for _, e := range events {
		b.pos.last = e
		b.pos.seen(e.ID)
	}
	b.pos.offset += int64(len(buf))
	b.pos.sum = prefixSum(b.pos.sum, buf)
	b.pos.lines += len(events)
	if b.opts.Appended != nil {
		b.opts.Appended(events)
	}
}

// CardsOf returns the card each event touched, as it stands now (in a
// Locked call).
func (b *Store) CardsOf(events []*wire.Event) []wire.Card {
	cards := make([]wire.Card, len(events))
	for i, e := range events {
		cards[i], _ = b.state.Card(e.Card)
	}
	return cards
}

// appendDurably writes buf at the end of the ledger in one write and fsyncs
// it. A failed write is truncated away so no partial line stays behind.
func (b *Store) appendDurably(buf []byte) error {
	path := filepath.Join(b.dir, LedgerFile)
	f, err := fsutil.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, b.pos.info) || fi.Size() != b.pos.offset {
		return fmt.Errorf("ledger: %s changed under the lock; retry", path)
	}
	b.failpoint("before-write")
	if n, err := f.Write(buf); err != nil || n != len(buf) {
		b.takeBack(f)
		return fmt.Errorf("append to %s: %w", path, errors.Join(err, errShortWrite(n, len(buf))))
	}
	b.failpoint("after-write")
	if err := b.timedSync(f); err != nil {
		b.takeBack(f)
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	b.failpoint("after-fsync")
	return nil
}

// takeBack removes what a failed append wrote to the ledger open in f. A
// reader without the lock may have read its lines already (they are in
// the file before the fsync) and go on from their end: were the file only
// cut back, the next append would land under that offset, and the reader
// would skip it or resume in the middle of a line. So the ledger is cut
// back, then replaced by a copy of itself: the next append goes to another
// file, which such a reader notices and reads from its start, each event
// once. Without room for the copy (a full disk) it is only cut back.
func (b *Store) takeBack(f *os.File) {
	_ = f.Truncate(b.pos.offset)
	src, err := os.Open(f.Name())
	if err != nil {
		return
	}
	defer src.Close()
	_ = ReplaceStream(f.Name(), func(w io.Writer) error {
		_, err := io.Copy(w, io.NewSectionReader(src, 0, b.pos.offset))
		return err
	})
}

// timedSync fsyncs the ledger an append wrote, timing it: Options.Synced
// gets the time, and Options.Warn hears of one past Options.SlowSync.
func (b *Store) timedSync(f *os.File) error {
	start := time.Now()
	err := b.fsync(f)
	d := time.Since(start)
	if b.opts.Synced != nil {
		b.opts.Synced(d)
	}
	limit := b.opts.SlowSync
	if limit == 0 {
		limit = DefaultSlowSync
	}
	if limit > 0 && d > limit && b.opts.Warn != nil {
		// Each slow fsync is news: not passed through warn's once-only
		// filter.
		b.opts.Warn(fmt.Sprintf("fsync of %s took %s (over %s, BL_SLOW_FSYNC): the disk is slow, and every write waits on it", LedgerFile, d.Round(time.Microsecond), limit))
	}
	return err
}

func errShortWrite(n, want int) error {
	if n == want {
		return nil
	}
	return fmt.Errorf("short write: %d of %d bytes", n, want)
}

// warn passes msg to Options.Warn, once per message per handle.
func (b *Store) warn(msg string) {
	if b.opts.Warn == nil || b.warned[msg] {
		return
	}
	if b.warned == nil {
		b.warned = map[string]bool{}
	}
	b.warned[msg] = true
	b.opts.Warn(msg)
}

// Warn passes msg to Options.Warn once per handle: for the parts of bl
// around the store (git sync) that find something a person should know.
func (b *Store) Warn(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.warn(msg)
}

// WarnHeld is Warn inside a View, Current or Locked call, which holds the
// handle's mutex already.
func (b *Store) WarnHeld(msg string) { b.warn(msg) }

func (b *Store) failpoint(stage string) {
	if b.opts.Failpoint != nil {
		b.opts.Failpoint(stage)
	}
}

// Close releases the open ledger file. The lock is only ever held inside a
// call.
func (b *Store) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pos.close()
	b.state.Release()
	return nil
}

// WrittenLine encodes e as the ledger line a writer appends and returns it
// with the event every reader will decode from it (JSON turns a nil list
// into null and invalid UTF-8 into U+FFFD): a write checks and applies
// that event, so the state it reports is the fold of the file.
func WrittenLine(e *wire.Event) ([]byte, *wire.Event, error) { return WrittenLineOn(e, nil) }

// WrittenLineOn is WrittenLine of an event that edits held, the card as it
// stands (nil for a new one): the phase, labels, assignee and lease owner
// it already holds pass (wire.ValidPhaseLabels, wire.ValidNames).
func WrittenLineOn(e *wire.Event, held *wire.Card) ([]byte, *wire.Event, error) {
	e.V = e.LineVersion()
	if err := wire.ValidUTF8(e); err != nil {
		return nil, nil, err
	}
	if err := wire.ValidNames(e, held); err != nil {
		return nil, nil, err
	}
	if err := wire.ValidPhaseLabels(e.Fields, held); err != nil {
		return nil, nil, err
	}
	line, err := wire.EncodeLine(e)
	if err != nil {
		return nil, nil, err
	}
	if len(line) > wire.MaxLine {
		// Readers treat a longer line as damage; never write one.
		return nil, nil, wire.Rule(wire.ErrInvalid, "%s of %s would make a %d-byte ledger line; the limit is %d bytes", e.Op, e.Card, len(line), wire.MaxLine)
	}
	d, err := wire.DecodeLine(line)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: %s of %s does not read back: %w", e.Op, e.Card, err)
	}
	return line, d, nil
}

// Options are the handle's options, defaults filled in.
func (b *Store) Options() Options { return b.opts }

// Counts are the store's own figures for Stats, inside a View call: the
// ledger's size, the events folded since the snapshot, the compactions
// folded into it and the last automatic compaction's failure.
func (b *Store) Counts() (ledgerBytes, sinceCompaction int64, compactions int, compactErr error) {
	return b.pos.offset, b.state.Events() - b.snapEvents, b.seq, b.compactErr
}

// SetFsync replaces the append path's fdatasync: a test's slow disk.
func (b *Store) SetFsync(fn func(*os.File) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fsync = fn
}

// Held reports whether the handle holds the ledger file open, and the
// offset it has folded the ledger to.
func (b *Store) Held() (open bool, offset int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pos.file != nil, b.pos.offset
}
