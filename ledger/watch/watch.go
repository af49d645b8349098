// Package watch follows a backlog as it changes, through fsnotify. It is
// kept apart from package ledger so the core carries no file-watching
// dependency.
//
// Follow delivers every event after a cursor exactly once, in order, and
// keeps going across compaction (events move from ledger.jsonl into
// archive/), torn-tail recovery and bl doctor --repair (the
// ledger file is replaced): it drains the file it had open, then continues
// in the new one, using the (at, id) cursor to skip what it already
// delivered.
package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"

	"github.com/bl-backlog/bl/ledger"
)

// Notifier signals whenever the backlog's ledger or snapshot changes.
// Signals coalesce: C holds at most one pending wake-up, so a slow reader
// never blocks the watcher and never misses that something changed.
type Notifier struct {
	C    <-chan struct{}
	w    *fsnotify.Watcher
	errs chan error
}

// NewNotifier starts watching dir, the backlog directory.
func NewNotifier(dir string) (*Notifier, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
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
func (n *Notifier) Close() error { return n.w.Close() }

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
	t := &tail{dir: dir, path: filepath.Join(dir, ledger.LedgerFile), cur: from, fn: fn, archives: map[string]bool{}}
	defer t.close()
	for {
		if err := t.catchUp(); err != nil {
			return err
		}
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
	cur       ledger.Cursor
	fn        func(*ledger.Event) error
	f         *os.File
	offset    int64
	archives  map[string]bool
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
	t.cur, t.offset, err = ledger.ReadEventsFile(t.f, t.path, t.offset, t.cur, t.fn)
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
	t.cur, err = ledger.ArchivedEvents(fresh, t.cur, t.fn)
	return err
}

// Events is Follow as channels: events arrive on the first; the second
// receives Follow's result when it stops, then both close.
func Events(ctx context.Context, dir string, from ledger.Cursor) (<-chan *ledger.Event, <-chan error) {
	out := make(chan *ledger.Event)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		defer close(out)
		done <- Follow(ctx, dir, from, func(e *ledger.Event) error {
			select {
			case out <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return out, done
}
