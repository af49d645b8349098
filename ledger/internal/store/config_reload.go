package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// A long-running process (bl mcp, bl serve, bl run --loop, bl daemon)
// keeps one handle for hours while git pull, bl sync or an editor changes
// config.json under it. ReloadConfig is how it takes the change: a stat
// per request, a read only when the stat changed, and the settings change
// only for a file that passes the checks Open makes. A one-shot command
// never calls it: it read the file once, at start, and that costs nothing
// more.

// configWatch is what the last ReloadConfig saw of config.json.
type configWatch struct {
	mu     sync.Mutex
	looked bool        // a ReloadConfig has read the file
	entry  os.FileInfo // config.json's entry (Lstat) then; nil when missing
	target os.FileInfo // the file a link inside the backlog leads to
	racy   bool        // modified too close to the read to trust its stat
	data   []byte      // the bytes of the settings in use, once read
	gen    uint64      // counts the changes of the settings
	said   string      // the last failure reported; "" after a good read
}

// racyWindow: a file modified this close to its read may change again
// with the same size and modification time (file systems stamp by the
// clock tick, some by the second or two), so it is read again at the next
// look until its stamp is older.
const racyWindow = 2 * time.Second

// ReloadConfig brings the handle's settings up to date with config.json:
// when the file's stat (inode, size, modification and change times)
// changed since the last look, it is read again with the checks Open
// makes — not a link out of the backlog, a regular file, at most
// MaxConfigBytes, decoding without a setting named twice. A file that
// fails them leaves the settings as they were and is the error, once per
// failure (nil while it stays the same); so is a config.json that is gone
// (bl keeps the settings it runs with rather than fall back to the
// defaults while a checkout replaces the file). A file gone or empty just
// after a change, or replaced while read, is a checkout under way: it is
// looked at again, said only if it stays so past racyWindow. It returns
// the settings and their generation, which changes only when the settings
// do.
func (b *Store) ReloadConfig() (Config, uint64, error) {
	w := &b.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	path := filepath.Join(b.dir, ConfigFile)
	entry, target, serr := statConfig(path)
	b.failpoint("reload-stat")
	// b.cfg changes only here, under w.mu: it is read without b.mu, so
	// that a look never waits for a long read of the state.
	if w.looked && !w.racy && sameStat(w.entry, entry) && sameStat(w.target, target) {
		return b.cfg, w.gen, nil
	}
	now := time.Now()
	cfg, data, err := b.lookConfig(path, entry, serr)
	w.looked, w.entry, w.target = true, entry, target
	w.racy = racy(entry, now) || racy(target, now)
	if err != nil && b.settling(entry, target, now) {
		// git checkout, pull or stash pop replace the file in steps
		// (unlink, create, write): a file gone or empty just after a
		// change is looked at again, and said only if it stays so.
		w.racy = true
		return b.cfg, w.gen, nil
	}
	if err != nil {
		if msg := err.Error(); msg != w.said {
			w.said = msg
			return b.cfg, w.gen, err
		}
		return b.cfg, w.gen, nil
	}
	w.said = ""
	if w.data != nil && bytes.Equal(data, w.data) {
		return b.cfg, w.gen, nil
	}
	w.data = data
	if !reflect.DeepEqual(cfg, b.cfg) {
		b.mu.Lock()
		b.cfg = cfg
		b.mu.Unlock()
		w.gen++
	}
	return b.cfg, w.gen, nil
}

// lookConfig reads config.json for ReloadConfig, whose entry is entry,
// or the error of its Lstat.
func (b *Store) lookConfig(path string, entry os.FileInfo, serr error) (Config, []byte, error) {
	if errors.Is(serr, fs.ErrNotExist) {
		return Config{}, nil, configGone(path)
	}
	if serr != nil {
		// Not a second Lstat: a file created since would be taken as
		// these settings, the defaults.
		return Config{}, nil, serr
	}
	if entry.Mode()&fs.ModeSymlink != 0 {
		// Open's CheckLinks, for this one entry.
		root, err := filepath.EvalSymlinks(b.dir)
		if err != nil {
			return Config{}, nil, err
		}
		if err := linkInside(root, path); err != nil {
			return Config{}, nil, err
		}
	}
	cfg, data, err := readConfigData(b.dir)
	if err == nil && data == nil {
		// Gone between the stat and the read.
		return Config{}, nil, configGone(path)
	}
	return cfg, data, err
}

// configGone: config.json is not there (a checkout replacing it, or
// removed). A start would run with the defaults; a running process keeps
// its settings rather than drop a review gate for the moment of a checkout.
func configGone(path string) error {
	return wire.Errorf(wire.ErrInvalid, "%s is gone (a restart runs with the defaults)", path)
}

// statConfig is the stat of config.json's entry, and of the file it leads
// to when it is a link; nil for what is not there, with the entry's error.
func statConfig(path string) (entry, target os.FileInfo, err error) {
	entry, err = os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if entry.Mode()&fs.ModeSymlink != 0 {
		target, _ = os.Stat(path)
	}
	return entry, target, nil
}

// settling reports whether config.json, seen as entry (and target) at now,
// is changing: replaced while it was read, or gone or empty just after a
// change (the backlog directory or the file changed within racyWindow).
func (b *Store) settling(entry, target os.FileInfo, now time.Time) bool {
	if e, t, _ := statConfig(filepath.Join(b.dir, ConfigFile)); !sameStat(e, entry) || !sameStat(t, target) {
		return true // replaced while it was read
	}
	if target != nil {
		entry = target
	}
	if entry == nil {
		dir, err := os.Stat(b.dir)
		return err == nil && racy(dir, now)
	}
	return entry.Mode().IsRegular() && entry.Size() == 0 && racy(entry, now)
}

// sameStat reports whether a and b are the same file, unchanged as far as
// its stat shows: the ctime too, which a rewrite in place with the size
// and modification time put back (touch -d, cp -p) still changes.
func sameStat(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode() &&
		changeTime(a) == changeTime(b)
}

// racy reports whether fi was modified within racyWindow of now.
func racy(fi os.FileInfo, now time.Time) bool {
	if fi == nil {
		return false
	}
	d := now.Sub(fi.ModTime())
	return d < racyWindow && d > -racyWindow
}
