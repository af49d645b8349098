// Package watch follows a backlog as it changes, through fsnotify. It is
// kept apart from package ledger so the core carries no file-watching
// dependency.
//
// Follow delivers every event after a cursor exactly once, and keeps going
// across compaction (events move from ledger.jsonl into archive/), torn-tail
// recovery, bl doctor --repair and bl sync (the ledger file is replaced):
// it drains the file it had open, then reads the new one, and delivers only
// events it has not read before, remembered by id; an event read before
// that now names another card (bl sync gave a local card whose id the
// remote created too a fresh id, keeping its events' ids) is delivered
// again, as it now reads. Events arrive in ledger
// order, except that a sync or git merge can bring in events another
// machine wrote earlier than ones already delivered; those are delivered
// when they arrive. A cursor names an event, so a follower restarted from
// the newest cursor it printed will not see such late arrivals: after a
// sync, restart from an older cursor (repeats are skipped by id).
//
// On top of Follow: Log is bl log (the history, then with follow the new
// events, through one filter), and Claim is bl claim --wait.
package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/bl-backlog/bl/ledger"
)

// Notifier signals whenever the backlog's ledger or snapshot changes.
// Signals coalesce: C holds at most one pending wake-up, so a slow reader
// never blocks the watcher and never misses that something changed.
type Notifier struct {
	C    <-chan struct{}
	w    *fsnotify.Watcher // nil while polling
	stop chan struct{}     // closes the poller
	errs chan error
}

// newWatcher is fsnotify.NewWatcher; tests make it fail.
var newWatcher = fsnotify.NewWatcher

// NewNotifier starts watching dir, the backlog directory. When the system
// has no inotify instance or watch left to give (fs.inotify.max_user_*),
// it polls the ledger and snapshot instead, every PollInterval, and says
// so once on stderr: a watcher or a waiting worker must not die of it.
func NewNotifier(dir string) (*Notifier, error) {
	w, err := newWatcher()
	if err == nil {
		if err = w.Add(dir); err != nil {
			w.Close()
		}
	}
	if err != nil {
		if !outOfWatches(err) {
			return nil, err
		}
		if _, serr := os.Stat(dir); serr != nil {
			return nil, serr
		}
		pollWarning.Do(func() {
			fmt.Fprintf(os.Stderr, "bl: warning: cannot watch %s (%v): polling it every %s instead; raise fs.inotify.max_user_instances and fs.inotify.max_user_watches (sysctl) to watch without polling\n", dir, err, PollInterval)
		})
		return newPoller(dir), nil
	}
	c := make(chan struct{}, 1)
	n := &Notifier{C: c, w: w, errs: make(chan error, 1)}
	go func() {
		defer close(c)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				switch filepath.Base(ev.Name) {
				case ledger.LedgerFile, ledger.SnapshotFile:
					select {
					case c <- struct{}{}:
					default:
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				select {
				case n.errs <- err:
				default:
				}
			}
		}
	}()
	return n, nil
}

// Err returns a pending watcher error, if any (for example an inotify
// queue overflow), without waiting.
func (n *Notifier) Err() error {
	select {
	case err := <-n.errs:
		return err
	default:
		return nil
	}
}

// Close stops watching and closes C.
func (n *Notifier) Close() error {
	if n.w == nil {
		close(n.stop)
		return nil
	}
	return n.w.Close()
}

// PollInterval is how often a Notifier without inotify looks at the files.
const PollInterval = 250 * time.Millisecond

var pollWarning sync.Once

// outOfWatches reports whether err is the kernel refusing another inotify
// instance (EMFILE) or watch (ENOSPC).
func outOfWatches(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.ENFILE)
}

// newPoller signals when the ledger or snapshot changes identity, size or
// modification time, looking every PollInterval.
func newPoller(dir string) *Notifier {
	c := make(chan struct{}, 1)
	n := &Notifier{C: c, stop: make(chan struct{}), errs: make(chan error, 1)}
	look := func() (sig [2]fileSig) {
		for i, name := range []string{ledger.LedgerFile, ledger.SnapshotFile} {
			sig[i] = signature(filepath.Join(dir, name))
		}
		return sig
	}
	go func() {
		defer close(c)
		last := look()
		t := time.NewTicker(PollInterval)
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
			}
			if now := look(); now != last {
				last = now
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	}()
	return n
}

// fileSig is what polling compares: a replaced, grown, cut or rewritten
// file differs in one of these.
type fileSig struct {
	ino, size int64
	mtime     int64
}

func signature(path string) fileSig {
	fi, err := os.Stat(path)
	if err != nil {
		return fileSig{ino: -1}
	}
	return fileSig{ino: inode(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// Follow calls fn for every event after from, oldest first, then for each
// new event as it is appended, until ctx ends (returning nil) or fn or the
// backlog fails. It never passes a partial line: only complete, checksummed
// events are delivered.
func Follow(ctx context.Context, dir string, from ledger.Cursor, fn func(*ledger.Event) error) error {
	n, err := NewNotifier(dir) // before reading, so no append slips between
	if err != nil {
		return err
	}
	defer n.Close()
	t := &tail{dir: dir, path: filepath.Join(dir, ledger.LedgerFile), from: from, fn: fn,
		archives: map[string]bool{}, seen: newIDSet(seenCap)}
	defer t.close()
	for {
		if err := t.catchUp(); err != nil {
			return err
		}
		t.started = true
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-n.C:
			if !ok {
				return errors.New("watch: file watcher stopped")
			}
			if err := n.Err(); err != nil {
				return err
			}
		}
	}
}

// tail is Follow's position: the ledger file it has open and how far it
// has read it, plus the archives already read.
type tail struct {
	dir, path string
	from      ledger.Cursor // where the caller asked to start
	started   bool          // the first catch-up is done
	fn        func(*ledger.Event) error
	f         *os.File
	offset    int64
	archives  map[string]bool
	seen      *idSet // events read so far, delivered or before from
}

// seenCap bounds the ids a follower remembers: far more than a ledger
// holds between compactions, so any event a replaced file or a new archive
// repeats is still known.
const seenCap = 1 << 18

// offer delivers e unless it was read before. Before the first catch-up is
// done, events up to the starting cursor are history the caller has, and
// are only remembered. After it, an event read for the first time is
// delivered even if it sorts before events already delivered: a sync or a
// git merge can bring in events another machine wrote earlier, and a sync
// re-stamps local events it moves after upstream's, which must not come
// twice.
func (t *tail) offer(e *ledger.Event) error {
	if !t.seen.add(e.ID, cardRefs(e)) {
		return nil
	}
	if !t.started && !t.from.Before(e) {
		return nil
	}
	return t.fn(e)
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// catchUp delivers everything new: archives not read yet, the rest of the
// open ledger file, and, if the ledger was replaced, the new file too.
func (t *tail) catchUp() error {
	for {
		if t.f == nil {
			// Archives first; a compaction that ran before the ledger was
			// opened left its events there.
			if err := t.readArchives(); err != nil {
				return err
			}
			f, err := os.Open(t.path)
			if err != nil {
				return err
			}
			t.f, t.offset = f, 0
			if err := t.readArchives(); err != nil {
				return err
			}
		}
		if err := t.drain(); err != nil {
			return err
		}
		replaced, err := t.replaced()
		if err != nil || !replaced {
			return err
		}
		// Everything the old file will ever hold was just drained.
		t.f.Close()
		t.f = nil
	}
}

func (t *tail) drain() error {
	var err error
	_, t.offset, err = ledger.ReadEventsFile(t.f, t.path, t.offset, ledger.Cursor{}, t.offer)
	return err
}

// replaced reports whether ledger.jsonl is no longer the open file, or was
// cut below what was read (a repair rewrote it in place).
func (t *tail) replaced() (bool, error) {
	now, err := os.Stat(t.path)
	if err != nil {
		return false, err
	}
	open, err := t.f.Stat()
	if err != nil {
		return false, err
	}
	return !os.SameFile(now, open) || now.Size() < t.offset, nil
}

func (t *tail) readArchives() error {
	segs, err := ledger.Segments(t.dir)
	if err != nil {
		return err
	}
	var fresh []string
	for _, path := range segs[:len(segs)-1] { // the last is the ledger
		if !t.archives[path] {
			t.archives[path] = true
			fresh = append(fresh, path)
		}
	}
	_, err = ledger.ArchivedEvents(fresh, ledger.Cursor{}, t.offer)
	return err
}

// idSet remembers up to max ids, forgetting the oldest first.
type idSet struct {
	ids  map[string]string // event id → the cards it names (cardRefs)
	ring []string
	next int
}

func newIDSet(max int) *idSet {
	return &idSet{ids: make(map[string]string), ring: make([]string, max)}
}

// add records id, naming the cards refs, and reports whether it was new
// or named other cards before.
func (s *idSet) add(id, refs string) bool {
	if was, ok := s.ids[id]; ok {
		s.ids[id] = refs
		return was != refs
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.ids[id] = refs
	return true
}

// cardRefs is what of e names a card (its card; a link's, unlink's or
// complete's to; parent and depends_on): all a rename changes.
func cardRefs(e *ledger.Event) string {
	f := e.Fields
	if e.To == "" && (f == nil || f.Parent == nil && f.DependsOn == nil) {
		return e.Card // most events: no allocation
	}
	refs := []string{e.Card, e.To}
	if f != nil && f.Parent != nil {
		refs = append(refs, "parent", *f.Parent)
	}
	if f != nil && f.DependsOn != nil {
		refs = append(refs, "depends_on")
		refs = append(refs, *f.DependsOn...)
	}
	return strings.Join(refs, "\x00")
}
