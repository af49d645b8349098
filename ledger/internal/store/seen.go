package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// SeenFile is the local record of how much history this clone has seen: the
// number of events and the newest one. git never tracks it (cache/ is
// ignored), so when a git revert or reset takes events out of the tracked
// files, the record still remembers them and bl doctor can say what
// happened. It is written by compaction, by bl sync and by bl doctor, never
// on a mutation's path, and without fsync: losing it loses only that
// warning.
const SeenFile = "cache/seen.json"

// seenRecord is SeenFile's content.
type seenRecord struct {
	Events int64  `json:"events"`
	Cursor string `json:"cursor"`
}

// MissingEvents is history this clone saw that the backlog's files no
// longer hold: a git revert or reset of a backlog commit took the events
// out. The ledger is a grow-only set, so they come back at the next merge
// of a branch that has them; undo is a bl command (reopen, unblock,
// update, release).
type MissingEvents struct {
	Seen    int64  `json:"seen"`    // events this clone had seen
	Now     int64  `json:"now"`     // events the files hold
	Missing int64  `json:"missing"` // at least this many are gone (Seen-Now, or 1 when only the newest is)
	Newest  string `json:"newest"`  // cursor of the newest event seen
	// NewestGone is set when that newest event itself is not in the
	// files.
	NewestGone bool `json:"newest_gone"`
}

// ReadSeen reads the record; ok is false when there is none or it does not
// read (it is a cache: a torn write loses only the warning), or when git
// tracks it: then it is a teammate's (tracked_local.go), which could hide
// a revert from bl doctor.
func ReadSeen(dir string) (r seenRecord, ok bool) {
	data, err := os.ReadFile(filepath.Join(dir, SeenFile))
	if err != nil || json.Unmarshal(data, &r) != nil || r.Events < 0 || !TrustLocal(dir, SeenFile) {
		return seenRecord{}, false
	}
	if _, err := wire.ParseCursor(r.Cursor); err != nil {
		return seenRecord{}, false
	}
	return r, true
}

// writeSeen replaces the record: temp file and rename, so a reader sees
// the old record or the new one, but no fsync. A record git tracks is
// left alone: written, it would be a change in the user's worktree.
func writeSeen(dir string, r seenRecord) error {
	path := filepath.Join(dir, SeenFile)
	if !TrustLocal(dir, SeenFile) {
		return errTrackedLocal
	}
	if err := CheckLocalPath(dir, SeenFile); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// A fresh temp file (never one at a known name: a link there would
	// be written through), renamed over the record.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// RecordSeen raises the record to a state holding events events, the
// newest at last. A state behind the record (fewer events, or an older
// newest event) leaves it as it is, so a revert stays noticed until bl
// doctor --repair accepts it. Errors are ignored: it is a cache.
func RecordSeen(dir string, events int64, last wire.Event) {
	if last.ID == "" {
		return
	}
	cur := wire.CursorOf(&last)
	if old, ok := ReadSeen(dir); ok {
		oc, _ := wire.ParseCursor(old.Cursor)
		if events < old.Events || (!oc.IsZero() && !oc.Before(&last) && oc != cur) {
			return
		}
		if events == old.Events && oc == cur {
			return // nothing new: no write
		}
	}
	_ = writeSeen(dir, seenRecord{Events: events, Cursor: cur.String()})
}

// RecordSeen raises this clone's record of the history it has seen to what
// the backlog holds now (see SeenFile). bl sync calls it after a commit.
func (b *Store) RecordSeen() error {
	b.NoteTrackedLocal()
	return b.View(func(s *fold.State, _ time.Time) error {
		RecordSeen(b.dir, s.Events(), s.Last())
		return nil
	})
}

// CheckSeen compares the history in the backlog directory dir with this
// clone's record of what it has seen and returns what is missing, or nil
// when nothing is (or there is no record yet). It only reads the files (a
// stale snapshot is folded in memory, as bl would rebuild it), so bl doctor
// can run it without changing anything but the record. With accept it
// replaces the record by the history as it is now, so a removal that is
// meant stops being reported; otherwise it only raises the record.
//
// The files are read without the lock, after the record: what the record
// says was seen was in the files before they were read. Events found
// missing, which files read in the middle of a compaction can seem to be,
// are looked for again once the lock was free (ReadSettled).
func CheckSeen(dir string, accept bool) (*MissingEvents, error) {
	type checked struct {
		m      *MissingEvents
		events int64
		last   wire.Event
	}
	c, err := ReadSettled(dir, func() (c checked, finding string, err error) {
		old, ok := ReadSeen(dir)
		t, err := ReadTree(dir)
		if err == nil {
			t[LedgerFile] = withoutTornTail(t[LedgerFile])
			var s *fold.State
			if s, err = t.fold(true); err == nil {
				c.events, c.last = s.Events(), s.Last()
				if ok {
					c.m, err = missing(t, old, c.events, c.last)
				}
			}
		}
		switch {
		case err != nil:
			finding = err.Error()
		case c.m != nil:
			finding = fmt.Sprintf("%+v", *c.m)
		}
		return c, finding, err
	})
	if err != nil {
		return nil, err
	}
	m, events, last := c.m, c.events, c.last
	switch {
	case accept && last.ID != "":
		if err := writeSeen(dir, seenRecord{Events: events, Cursor: wire.CursorOf(&last).String()}); err != nil {
			return m, fmt.Errorf("record the history seen in %s: %w", SeenFile, err)
		}
	case accept && TrustLocal(dir, SeenFile):
		if err := os.Remove(filepath.Join(dir, SeenFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return m, err
		}
	case m == nil:
		RecordSeen(dir, events, last)
	}
	return m, nil
}

// missing compares the record with the tree t, whose fold holds events
// events, the newest at last.
func missing(t Tree, old seenRecord, events int64, last wire.Event) (*MissingEvents, error) {
	oc, err := wire.ParseCursor(old.Cursor)
	if err != nil || oc.IsZero() {
		return nil, nil
	}
	m := &MissingEvents{Seen: old.Events, Now: events, Newest: old.Cursor}
	seen := &wire.Event{At: oc.At, ID: oc.ID}
	switch {
	case last.ID == "":
		m.NewestGone = true
	case wire.CursorOf(&last) == oc:
	case last.Before(seen):
		m.NewestGone = true // the newest event now is older than the newest seen
	default:
		// Newer events came since (or it was re-stamped): look for it by id.
		all, err := t.Events()
		if err != nil {
			return nil, err
		}
		m.NewestGone = true
		for _, e := range all {
			if e.ID == oc.ID {
				m.NewestGone = false
				break
			}
		}
	}
	if events < old.Events {
		m.Missing = old.Events - events
	} else if m.NewestGone {
		m.Missing = 1
	}
	if m.Missing == 0 {
		return nil, nil
	}
	return m, nil
}

// withoutTornTail is the local ledger data up to its torn tail, if it has
// one: a crashed append, never acknowledged and set aside by the next
// writer, so not an event the clone saw nor one it missed. (ReadTree reads
// every file as git would commit it, whole, where a torn tail is damage.)
func withoutTornTail(data []byte) []byte {
	lr := wire.NewLineReader(LedgerFile, bytes.NewReader(data), wire.LineStart{}, min(len(data), wire.FileBufSize))
	for {
		_, _, torn, err := lr.Event()
		var ce *wire.CorruptError
		switch {
		case torn != nil:
			return data[:torn.Offset]
		case err != nil && !errors.As(err, &ce):
			return data // io.EOF, or nothing a tail explains: the fold reports it
		}
	}
}
