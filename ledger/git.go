package ledger

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/repair"
	"github.com/bl-backlog/bl/ledger/internal/store"
)

// Tree is the content of a backlog's tracked files by name relative to
// the backlog directory: what git holds of it, a commit's or a directory's
// (see "Git" in doc.go). A tree may name an archive segment or the
// snapshot with nil data: named, not read (see Unread).
type Tree map[string][]byte

// ReadTree reads the tracked files of the backlog in dir.
func ReadTree(dir string) (Tree, error) {
	t, err := store.ReadTree(dir)
	return Tree(t), err
}

// Events returns every event the tree holds, archives and ledger, each once,
// in (at, id) order.
func (t Tree) Events() ([]*Event, error) { return store.Tree(t).Events() }

// QuarantineReused takes out of t (as commit from holds it) the ledger
// lines that give an archived event's id to a different event
// (store.QuarantineReused) and returns them.
func QuarantineReused(dir string, t Tree, from, commit string) []Quarantined {
	return store.QuarantineReused(dir, store.Tree(t), from, commit)
}

// Fold folds the tree the way Open would: the snapshot, then the ledger
// lines after it. A tree whose files disagree (see normalize) is folded in
// its normal form.
func (t Tree) Fold() (*State, error) { return stateOf(store.Tree(t).Fold()) }

// FoldWith folds t as Fold does, for a tree that may leave segments unread:
// the snapshot and the ledger are enough while they agree with the
// segments' names; when they do not (a union of two snapshots, ledger
// lines older than the snapshot), the unread segments are read through
// load and the tree is folded in its normal form.
func (t Tree) FoldWith(load Loader) (*State, error) { return stateOf(store.Tree(t).FoldWith(load)) }

// FoldOnSnapshot folds t as FoldWith does and calls fn with the state,
// for a tree whose snapshot is unread because it is the same file as the
// snapshot of the backlog in dir (what a sync leaves unread): the fold
// reads that file lazily, as Open does, decoding only what t's ledger
// lines touch. The state is released when fn returns.
func (t Tree) FoldOnSnapshot(dir string, load Loader, fn func(*State) error) error {
	s, err := store.Tree(t).FoldOnSnapshot(dir, load)
	if err != nil {
		return err
	}
	defer s.Release()
	return fn(&State{s})
}

func stateOf(s *fold.State, err error) (*State, error) {
	if err != nil {
		return nil, err
	}
	return &State{s}, nil
}

// Equal reports whether two trees hold the same files with the same bytes.
func (t Tree) Equal(u Tree) bool { return store.Tree(t).Equal(store.Tree(u)) }

// Unread lists the files t names without their data: archive segments,
// oldest first, then the snapshot.
func (t Tree) Unread() []string { return store.Tree(t).Unread() }

// Load reads every unread segment of t through load, in place.
func (t Tree) Load(load Loader) error { return store.Tree(t).Load(load) }

// SettleSnapshot quarantines what a plain git pull or merge brought into
// the snapshot of the backlog in dir that does not read (see
// store.SettleSnapshot).
func SettleSnapshot(dir string, t Tree, local []byte, from, commit string) ([]Quarantined, error) {
	return store.SettleSnapshot(dir, store.Tree(t), local, from, commit)
}

// Tree reads the backlog's tracked files under the lock, so it never sees
// an append half done: what sync commits.
func (b *Backlog) Tree(ctx context.Context) (t Tree, err error) {
	err = b.st.Locked(ctx, func(*fold.State) error {
		t, err = ReadTree(b.Dir())
		return err
	})
	return t, err
}

// TreeUnread reads the backlog's tracked files under the lock, as Tree
// does, leaving the archive segments and the snapshot skip accepts unread
// (nil data), and calls fn with them and with the state they fold to
// before the lock is released: the files on disk are then the ones the
// tree names, for fn to look at as it needs. fn must not keep the state.
func (b *Backlog) TreeUnread(ctx context.Context, skip func(name string) bool, fn func(t Tree, s *State) error) error {
	return b.st.Locked(ctx, func(s *fold.State) error {
		t, err := store.ReadTreeUnread(b.Dir(), skip)
		if err != nil {
			return err
		}
		return fn(Tree(t), &State{s})
	})
}

// ApplyUpstream rebases the local backlog onto upstream (see Rebase) and
// writes the result into the directory under the lock, then returns the
// tree it wrote (before the compaction ApplyUpstreamUnread may add). The
// files change together through a journal (writeTree), so a crash leaves
// either the old backlog or the new one.
func (b *Backlog) ApplyUpstream(ctx context.Context, upstream Tree) (Tree, RebaseResult, error) {
	return b.applyUpstream(ctx, upstream, nil)
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
	dir := b.Dir()
	err = b.st.Locked(ctx, func(*fold.State) error {
		up := store.Tree(maps.Clone(upstream))
		unread := map[string]bool{}
		for _, name := range up.Unread() {
			unread[name] = true
		}
		local, err := store.ReadTreeUnread(dir, func(name string) bool { return unread[name] })
		if err != nil {
			return err
		}
		compact := false
		for _, name := range local.Archives() {
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
		segments := func(name string) ([]byte, error) {
			return os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		}
		rebased, r, err := repair.RebaseOnto(up, local, segments)
		if err != nil {
			return err
		}
		out, res = Tree(rebased), r
		res.Compacted, res.Conflicts, err = b.st.ReplaceTree(local, rebased, compact)
		return err
	})
	return out, res, err
}

// Absorb takes in events written elsewhere — a claim arbiter's record of a
// card's lease events, each line as its writer encoded it — that this
// backlog does not hold yet: their lines are appended unchanged, stamps
// included, under the writers' lock, and folded. It returns how many it
// appended. Lines that do not read as events (damage, a newer format)
// append nothing and are an error.
//
// The stamps are kept, never moved after this backlog's newest event as a
// sync's rebase moves local events: every clone must order the card's
// lease events as their writers did, each stamped after the ones before it
// that it read. A line stamped before events this backlog holds leaves
// the ledger out of order, which every reader folds sorted (a git union
// merge leaves the same) and the next compaction writes back sorted.
func (b *Backlog) Absorb(ctx context.Context, lines []byte) (int, error) {
	return b.st.Absorb(ctx, lines)
}

// RecordSeen raises this clone's record of the history it has seen to what
// the backlog holds now (see SeenFile). bl sync calls it after a commit.
func (b *Backlog) RecordSeen() error { return b.st.RecordSeen() }
