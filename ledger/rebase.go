package ledger

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

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
	for _, name := range t.archives() {
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
func (t Tree) FoldWith(load Loader) (*State, error) {
	s, err := t.foldWith(load)
	if err != nil {
		return nil, err
	}
	return &State{s}, nil
}

// foldWith is FoldWith for the store.
func (t Tree) foldWith(load Loader) (*fold.State, error) {
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

// rebaseOnto is Rebase for trees that may leave segments unread: a
// segment upstream names without data is one the local tree holds too,
// with the same bytes (read or not). Such shared segments are not decoded:
// the events of upstream's other segments and ledger are compared with the
// local tree's other segments and ledger. A local event could still be in
// a shared segment only if it is no newer than the newest event a shared
// segment is named after; only then are the shared segments read, through
// load. The result names the shared segments unread as well, and its
// conflicts are not counted (the caller folds what it writes).
func rebaseOnto(upstream, local Tree, load Loader) (Tree, RebaseResult, error) {
	var res RebaseResult
	sh, err := sharedSegments(upstream, local, load)
	if err != nil {
		return nil, res, err
	}
	up, err := upstream.union(sh.own(upstream)...)
	if err != nil {
		return nil, res, fmt.Errorf("upstream: %w", err)
	}
	mine, err := local.union(sh.own(local)...)
	if err != nil {
		return nil, res, fmt.Errorf("local: %w", err)
	}
	if err := sh.bound(); err != nil {
		return nil, res, err
	}
	if res.Pulled, err = countPulled(up, mine, sh); err != nil {
		return nil, res, err
	}
	res.Upstream = len(up)
	out := rebasedFiles(upstream, local)
	if out[LedgerFile], err = appendLocal(&res, upstream[LedgerFile], up, mine, sh); err != nil {
		return nil, res, err
	}
	return out, res, nil
}

// shared is the segments upstream names unread that the local tree holds
// too, with the same bytes: the rebase decodes them only when a local
// event could be in them.
type shared struct {
	names map[string]bool
	local Tree
	load  Loader
	last  *Event          // the newest event they can hold (bound)
	ids   map[string]bool // their event ids, once read
}

// sharedSegments finds the shared segments of upstream and local.
func sharedSegments(upstream, local Tree, load Loader) (*shared, error) {
	sh := &shared{names: map[string]bool{}, local: local, load: load}
	for _, name := range upstream.Unread() {
		if _, ok := local[name]; !ok {
			return nil, fmt.Errorf("upstream: %s: not read, and the local backlog does not hold it", name)
		}
		if name != SnapshotFile { // the rebase never reads the snapshot
			sh.names[name] = true
		}
	}
	return sh, nil
}

// own is the event files of t that are not shared: its other segments
// and its ledger.
func (sh *shared) own(t Tree) []string {
	var names []string
	for _, name := range t.archives() {
		if !sh.names[name] {
			names = append(names, name)
		}
	}
	return append(names, LedgerFile)
}

// bound sets the newest event any shared segment can hold: the one it is
// named after. A name that does not say (not written by bl) makes the
// shared segments be read at once, for their real newest event.
func (sh *shared) bound() error {
	bounded := true
	for name := range sh.names {
		e, ok := segmentNewest(name)
		bounded = bounded && ok
		if ok && (sh.last == nil || sh.last.Before(e)) {
			sh.last = e
		}
	}
	if !bounded {
		return sh.read()
	}
	return nil
}

// read decodes the shared segments, through load for those not read.
func (sh *shared) read() error {
	sh.ids = map[string]bool{}
	for name := range sh.names {
		data := sh.local[name]
		if data == nil {
			if sh.load == nil {
				return fmt.Errorf("%s: not read, and nothing to read it with", name)
			}
			var err error
			if data, err = sh.load(name); err != nil {
				return fmt.Errorf("read %s: %w", name, err)
			}
		}
		evs, err := decodeAll(name, data)
		if err != nil {
			return err
		}
		for _, e := range evs {
			sh.ids[e.ID] = true
			if sh.last == nil || sh.last.Before(e) {
				sh.last = e
			}
		}
	}
	return nil
}

// holds reports whether a shared segment holds e, reading them only when
// e is no newer than the newest event they can hold.
func (sh *shared) holds(e *Event) (bool, error) {
	if sh.last == nil || sh.last.Before(e) {
		return false, nil
	}
	if sh.ids == nil {
		if err := sh.read(); err != nil {
			return false, err
		}
	}
	return sh.ids[e.ID], nil
}

// countPulled counts upstream's events the local tree lacks.
func countPulled(up, mine []*Event, sh *shared) (int, error) {
	have := make(map[string]bool, len(mine))
	for _, e := range mine {
		have[e.ID] = true
	}
	n := 0
	for _, e := range up {
		if have[e.ID] {
			continue
		}
		if in, err := sh.holds(e); err != nil {
			return 0, err
		} else if !in {
			n++
		}
	}
	return n, nil
}

// rebasedFiles is upstream's files, with the local settings files
// upstream lacks.
func rebasedFiles(upstream, local Tree) Tree {
	out := Tree{}
	for name, data := range upstream {
		out[name] = data
	}
	for _, name := range []string{ConfigFile, IgnoreFile, AttributesFile} {
		if _, ok := out[name]; !ok && local[name] != nil {
			out[name] = local[name]
		}
	}
	return out
}

// appendLocal is upstream's ledger with the local events upstream lacks
// appended, each stamped after the newest event before it (restamped
// when it is not), counted in res.
func appendLocal(res *RebaseResult, upLedger []byte, up, mine []*Event, sh *shared) ([]byte, error) {
	known := make(map[string]bool, len(up))
	for _, e := range up {
		known[e.ID] = true
	}
	var last *Event
	if len(up) > 0 {
		last = up[len(up)-1]
	}
	if sh.last != nil && (last == nil || last.Before(sh.last)) {
		last = sh.last
	}
	ledger := append([]byte(nil), upLedger...)
	if len(ledger) > 0 && ledger[len(ledger)-1] != '\n' {
		ledger = append(ledger, '\n') // its last event lost its newline
	}
	for _, e := range mine {
		if known[e.ID] {
			continue
		}
		if in, err := sh.holds(e); err != nil {
			return nil, err
		} else if in {
			continue
		}
		res.Local++
		if last != nil && !last.Before(e) {
			e = restamp(e, last.At.Add(1))
			res.Restamped++
		}
		line, err := EncodeLine(e)
		if err != nil {
			return nil, err
		}
		ledger = append(ledger, line...)
		last = e
	}
	return ledger, nil
}

// segmentNewest is the newest event a segment holds, as its name says
// (archive/<unix nanoseconds>-<event id>.jsonl); false when the name does
// not say.
func segmentNewest(name string) (*Event, bool) {
	base := strings.TrimSuffix(path.Base(name), ".jsonl")
	c, err := ParseCursor(base)
	if err != nil {
		return nil, false
	}
	return &Event{At: c.At, ID: c.ID}, true
}

// readTreeUnread reads the tracked files of the backlog in dir, leaving
// the archive segments and the snapshot skip accepts unread (named, nil
// data).
func readTreeUnread(dir string, skip func(name string) bool) (Tree, error) {
	t := Tree{}
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
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			t[name] = data
		}
		return nil
	})
	return t, err
}

// segmentLoader reads a segment from the backlog directory.
func (b *Backlog) segmentLoader() Loader {
	return func(name string) ([]byte, error) {
		return os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(name)))
	}
}

// TreeUnread reads the backlog's tracked files under the lock, as Tree
// does, leaving the archive segments and the snapshot skip accepts unread
// (nil data), and calls fn with them and with the state they fold to
// before the lock is released: the files on disk are then the ones the
// tree names, for fn to look at as it needs. fn must not keep the state.
func (b *Backlog) TreeUnread(ctx context.Context, skip func(name string) bool, fn func(t Tree, s *State) error) error {
	return b.withLock(ctx, func() error {
		t, err := readTreeUnread(b.dir, skip)
		if err != nil {
			return err
		}
		return fn(t, &State{b.state})
	})
}

// ApplyUpstreamUnread is ApplyUpstream for an upstream tree that leaves
// archive segments or the snapshot unread (nil data): the caller vouches
// that the local backlog holds a file of that name with the same bytes,
// and such files are neither read nor decoded (see rebaseOnto), so the
// round costs what is new on either side, not all history. load reads an
// unread upstream file the local backlog turns out not to hold.
//
// The result carries compaction: when the local side had compacted since
// it last took upstream's files (it holds segments upstream lacks), or the
// rebased ledger is past the compaction threshold, the result is compacted
// the ordinary way (snapshot and tail to a new snapshot and a new segment),
// so the next writer on any clone that takes it does not compact all
// history again. res.Compacted says so. A failed compaction (a full disk)
// leaves the rebased backlog, which reads and writes as before.
func (b *Backlog) ApplyUpstreamUnread(ctx context.Context, upstream Tree, load Loader) (RebaseResult, error) {
	_, res, err := b.applyUpstream(ctx, upstream, load)
	return res, err
}

func (b *Backlog) applyUpstream(ctx context.Context, upstream Tree, load Loader) (out Tree, res RebaseResult, err error) {
	err = b.withLock(ctx, func() error {
		up := maps.Clone(upstream)
		unread := map[string]bool{}
		for _, name := range up.Unread() {
			unread[name] = true
		}
		local, err := readTreeUnread(b.dir, func(name string) bool { return unread[name] })
		if err != nil {
			return err
		}
		compact := false
		for _, name := range local.archives() {
			if _, ok := up[name]; !ok {
				compact = true // the local side compacted since
			}
		}
		for name := range unread {
			if _, ok := local[name]; !ok {
				if load == nil {
					return fmt.Errorf("upstream: %s: not read, and nothing to read it with", name)
				}
				data, err := load(name)
				if err != nil {
					return fmt.Errorf("upstream: read %s: %w", name, err)
				}
				up[name] = data
			}
		}
		if out, res, err = rebaseOnto(up, local, b.segmentLoader()); err != nil {
			return err
		}
		if err := writeTree(b.dir, local, out); err != nil {
			return err
		}
		if err := b.reload(); err != nil {
			return err
		}
		limit := b.cfg.compactThreshold(b.snapSize())
		if b.pos.offset > b.pos.base && (compact || (limit > 0 && b.pos.offset-b.pos.base >= limit)) {
			if _, err := b.compactLocked(); err != nil {
				b.compactErr = err
			} else {
				res.Compacted = true
			}
		}
		res.Conflicts = b.state.NumConflicts()
		return nil
	})
	return out, res, err
}

// Tree reads the backlog's tracked files under the lock, so it never sees
// an append half done: what sync commits.
func (b *Backlog) Tree(ctx context.Context) (t Tree, err error) {
	err = b.withLock(ctx, func() error {
		t, err = ReadTree(b.dir)
		return err
	})
	return t, err
}

// ApplyUpstream rebases the local backlog onto upstream (see Rebase) and
// writes the result into the directory under the lock, then returns the
// tree it wrote (before the compaction ApplyUpstreamUnread may add). The
// files change together through a journal (writeTree), so a crash leaves
// either the old backlog or the new one.
func (b *Backlog) ApplyUpstream(ctx context.Context, upstream Tree) (Tree, RebaseResult, error) {
	return b.applyUpstream(ctx, upstream, nil)
}
