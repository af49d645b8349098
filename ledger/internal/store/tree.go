package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Tree is the tracked content of a backlog directory, by slash-separated
// name relative to it: ledger.jsonl, snapshot.json, config.json,
// .gitignore, .gitattributes and archive/*.jsonl. It is what git stores, and what sync merges.
type Tree map[string][]byte

// Tracked reports whether a file name (relative, slash-separated) belongs
// in git. The lock, torn tails set aside by recovery, temp files and caches
// stay local.
func Tracked(name string) bool {
	switch name {
	case LedgerFile, SnapshotFile, ConfigFile, IgnoreFile, AttributesFile:
		return true
	}
	if !strings.Contains(name, "/") && strings.HasSuffix(name, ".md") {
		return true // a generated board (sync.board)
	}
	dir, base := path.Split(name)
	return dir == ArchiveDir+"/" && strings.HasSuffix(base, ".jsonl") && !strings.HasPrefix(base, ".")
}

// ReadTree reads the tracked files of the backlog in dir.
func ReadTree(dir string) (Tree, error) {
	return ReadTreeUnread(dir, func(string) bool { return false })
}

// Archives returns the tree's archive names, oldest first.
func (t Tree) Archives() []string {
	var names []string
	for name := range t {
		if strings.HasPrefix(name, ArchiveDir+"/") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Events returns every event the tree holds, archives and ledger, each once,
// in (at, id) order.
func (t Tree) Events() ([]*wire.Event, error) {
	return t.Union(append(t.Archives(), LedgerFile)...)
}

// Union decodes the named files and returns their events, each once (see
// settle.go), in (at, id) order.
func (t Tree) Union(names ...string) ([]*wire.Event, error) {
	var all []*wire.Event
	for _, name := range names {
		evs, err := DecodeAll(name, t[name])
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
	}
	return wire.SettleEvents(all)
}

// DecodeAll decodes every line of a committed ledger or archive file (git's
// copy, a merge driver's input). Such a file is written whole, so a torn
// tail is damage too: any line that is not an event is a *CorruptError.
func DecodeAll(name string, data []byte) ([]*wire.Event, error) {
	evs, _, torn, err := wire.ReadEventsData(name, data)
	if torn != nil {
		return nil, &wire.CorruptError{Path: name, Line: torn.Line, Offset: torn.Offset, Err: fmt.Errorf("%w: %s", wire.ErrFraming, torn.Reason)}
	}
	return evs, err
}

// RebaseResult says what Rebase did.
type RebaseResult struct {
	Upstream  int  `json:"upstream"`  // events upstream has (outside the segments both sides share, see rebaseOnto)
	Pulled    int  `json:"pulled"`    // of those, how many the local side lacked
	Local     int  `json:"local"`     // events only the local side had, now after upstream's
	Restamped int  `json:"restamped"` // of those, how many got a later time to stay after upstream
	Conflicts int  `json:"conflicts"` // events the fold of the result refuses
	Compacted bool `json:"compacted"` // the result was compacted (ApplyUpstreamUnread)
	// Renamed are the local cards whose id upstream had created too:
	// their local events now name a fresh id (see repair.RebaseOnto).
	Renamed []Renamed `json:"renamed,omitempty"`
	// Twice are the cards this clone holds two creates of (a plain git
	// merge brought them together), left as they are for bl doctor.
	Twice []string `json:"created_twice,omitempty"`
}

// Renamed is a local card a rebase gave a fresh id, because upstream
// holds another create of the id it had.
type Renamed struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Events int    `json:"events"` // local events rewritten to name To
}

// Fold folds the tree the way Open would: the snapshot, then the ledger
// lines after it. A tree whose files disagree (see Normalize) is folded in
// its normal form.
func (t Tree) Fold() (*fold.State, error) { return t.fold(true) }

func (t Tree) fold(mayNormalize bool) (*fold.State, error) {
	s, hdr, stale := fold.NewState(), wire.SnapshotHeader{}, false
	if data, ok := t[SnapshotFile]; ok {
		var err error
		if s, hdr, err = DecodeSnapshot(SnapshotFile, bytes.NewReader(data), nil); errors.Is(err, ErrStale) {
			s, stale = fold.NewState(), true // a union of two snapshots
		} else if err != nil {
			return nil, err
		}
	}
	return t.foldFrom(s, hdr, stale, mayNormalize)
}

// foldFrom is fold from s, the state of t's snapshot (hdr its header;
// stale when it is a union of two).
func (t Tree) foldFrom(s *fold.State, hdr wire.SnapshotHeader, stale, mayNormalize bool) (*fold.State, error) {
	led := t[LedgerFile]
	if hdr.TailBytes > 0 && int64(len(led)) >= hdr.TailBytes && wire.CrcHex(led[:hdr.TailBytes]) == hdr.TailCRC {
		led = led[hdr.TailBytes:]
	}
	var evs []*wire.Event
	if !stale {
		var err error
		if evs, err = DecodeAll(LedgerFile, led); err != nil {
			return nil, err
		}
		last := s.Last()
		stale = archiveFingerprint(t.Archives()) != hdr.Archives && (hdr.V != 0 || len(t.Archives()) > 0)
		stale = stale || (len(evs) > 0 && last.ID != "" && !last.Before(evs[0]))
		if !stale && len(evs) > 1 {
			// A git union merge: the events in (at, id) order, each once.
			if evs, err = wire.SettleEvents(evs); err != nil {
				return nil, err
			}
			stale = last.ID != "" && !last.Before(evs[0])
		}
	}
	if !stale {
		for _, e := range evs {
			_ = s.Apply(e)
		}
		return s, nil
	}
	if !mayNormalize {
		return nil, wire.Errorf(wire.ErrCorrupt, "backlog files still disagree after normalizing")
	}
	all, err := DecodeAll(LedgerFile, t[LedgerFile])
	if err != nil {
		return nil, err
	}
	norm, _, err := NormalTree(t, all)
	if err != nil {
		return nil, err
	}
	return norm.fold(false)
}

// Equal reports whether two trees hold the same files with the same bytes.
func (t Tree) Equal(u Tree) bool {
	if len(t) != len(u) {
		return false
	}
	for name, data := range t {
		if other, ok := u[name]; !ok || !bytes.Equal(data, other) {
			return false
		}
	}
	return true
}

// MergeFiles is the optional git merge driver for ledger.jsonl and
// archive segments: the events of every version given (base, ours, theirs), each
// once, in (at, id) order. It never produces conflict markers. A snapshot
// that no longer matches the merged files is rebuilt by the next bl that
// opens the backlog (see Normalize).
func MergeFiles(versions ...[]byte) ([]byte, error) {
	t, names := Tree{}, make([]string, len(versions))
	for i, data := range versions {
		names[i] = fmt.Sprintf("version %d", i+1)
		t[names[i]] = data
	}
	all, err := t.Union(names...)
	if err != nil {
		return nil, err
	}
	return EncodeEvents(all)
}

// A sync round compares two backlogs that share most of their history:
// the archive segments both hold. Segments are never changed once written
// and are named after their newest event, so a segment both sides hold
// under one name, with the same bytes (git's blob hash tells), need not be
// read to rebase one side onto the other. A Tree may name such a segment
// with nil data: named, not read. The same holds for a snapshot.json both
// sides hold with the same bytes: the rebase never needs it, only a fold
// does. The functions that accept such a tree say so, and read a file
// (through a Loader) only when they cannot do without it: a fold, a
// snapshot that does not match the segments (a union of two snapshots), or
// an event old enough to be in a segment.

// Loader reads a file that a tree names but did not read.
type Loader func(name string) ([]byte, error)

// mayBeUnread reports whether a tree may name a file without its data:
// archive segments and the snapshot.
func mayBeUnread(name string) bool {
	return name == SnapshotFile || strings.HasPrefix(name, ArchiveDir+"/")
}

// Unread lists the files t names without their data: archive segments,
// oldest first, then the snapshot.
func (t Tree) Unread() []string {
	var names []string
	for _, name := range t.Archives() {
		if t[name] == nil {
			names = append(names, name)
		}
	}
	if data, ok := t[SnapshotFile]; ok && data == nil {
		names = append(names, SnapshotFile)
	}
	return names
}

// Load reads every unread segment of t through load, in place.
func (t Tree) Load(load Loader) error {
	for _, name := range t.Unread() {
		if load == nil {
			return fmt.Errorf("%s: not read, and nothing to read it with", name)
		}
		data, err := load(name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if data == nil {
			data = []byte{}
		}
		t[name] = data
	}
	return nil
}

// FoldWith folds t as Fold does, for a tree that may leave segments unread:
// the snapshot and the ledger are enough while they agree with the
// segments' names; when they do not (a union of two snapshots, ledger
// lines older than the snapshot), the unread segments are read through
// load and the tree is folded in its normal form.
func (t Tree) FoldWith(load Loader) (*fold.State, error) {
	if len(t.Unread()) == 0 {
		return t.fold(true)
	}
	if data, ok := t[SnapshotFile]; ok && data == nil {
		// The fold starts from the snapshot: read it first.
		if load == nil {
			return nil, fmt.Errorf("%s: not read, and nothing to read it with", SnapshotFile)
		}
		snap, err := load(SnapshotFile)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", SnapshotFile, err)
		}
		t = maps.Clone(t)
		t[SnapshotFile] = snap
	}
	if s, err := t.fold(false); err == nil {
		return s, nil
	}
	full := maps.Clone(t)
	if err := full.Load(load); err != nil {
		return nil, err
	}
	return full.fold(true)
}

// FoldOnSnapshot is FoldWith for a tree whose snapshot is unread because
// it is the same file as the snapshot of the backlog in dir: the fold
// starts from that file read through its index, lazily, as Open reads it,
// so it decodes only the snapshot lines its ledger lines touch. A tree
// whose files disagree, or a snapshot that cannot be opened so, is folded
// by FoldWith. The caller releases the state (State.Release).
func (t Tree) FoldOnSnapshot(dir string, load Loader) (*fold.State, error) {
	if data, ok := t[SnapshotFile]; !ok || data != nil {
		return t.FoldWith(load)
	}
	s, hdr, f, err := openSnapshotIndexed(dir, func(string, *os.File) error { return nil })
	if err != nil || f == nil {
		return t.FoldWith(load)
	}
	if s.Source() == nil {
		f.Close() // read whole: the state does not hold the file
	}
	st, err := t.foldFrom(s, hdr, false, false)
	if err != nil {
		s.Release()
		return t.FoldWith(load)
	}
	return st, nil
}

// ReadTreeUnread reads the tracked files of the backlog in dir, leaving
// the archive segments and the snapshot skip accepts unread (named, nil
// data).
func ReadTreeUnread(dir string, skip func(name string) bool) (Tree, error) {
	t := Tree{}
	root := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || d.IsDir() {
			return err
		}
		name := filepath.ToSlash(rel)
		switch {
		case !Tracked(name):
		case mayBeUnread(name) && skip(name):
			t[name] = nil
		default:
			if d.Type()&fs.ModeSymlink != 0 {
				// A link a teammate committed (.gitattributes ->
				// /dev/stdin, board.md -> ~/.ssh/id_rsa): read, it
				// would block or show that file as the backlog's.
				if root == "" {
					if root, err = filepath.EvalSymlinks(dir); err != nil {
						return err
					}
				}
				if err := linkInside(root, p); err != nil {
					return err
				}
			}
			data, err := fsutil.ReadRegular(p)
			var special *fsutil.NotRegularError
			if errors.As(err, &special) {
				return wire.Errorf(wire.ErrCorrupt, "%v; replace it with the backlog's file", err)
			}
			if err != nil {
				return err
			}
			t[name] = data
		}
		return nil
	})
	return t, err
}

// FoldNormal folds a tree already in its normal form (normalTree), as a
// load of its files would.
func (t Tree) FoldNormal() (*fold.State, error) { return t.fold(false) }
