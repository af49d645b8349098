package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

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
	return readTreeUnread(dir, func(string) bool { return false })
}

// archives returns the tree's archive names, oldest first.
func (t Tree) archives() []string {
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
func (t Tree) Events() ([]*Event, error) {
	return t.union(append(t.archives(), LedgerFile)...)
}

// union decodes the named files and returns their events, each once (see
// settle.go), in (at, id) order.
func (t Tree) union(names ...string) ([]*Event, error) {
	var all []*Event
	for _, name := range names {
		evs, err := decodeAll(name, t[name])
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
	}
	return wire.SettleEvents(all)
}

// decodeAll decodes every line of a committed ledger or archive file (git's
// copy, a merge driver's input). Such a file is written whole, so a torn
// tail is damage too: any line that is not an event is a *CorruptError.
func decodeAll(name string, data []byte) ([]*Event, error) {
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
}

// Fold folds the tree the way Open would: the snapshot, then the ledger
// lines after it. A tree whose files disagree (see normalize) is folded in
// its normal form.
func (t Tree) Fold() (*State, error) {
	s, err := t.fold(true)
	if err != nil {
		return nil, err
	}
	return &State{s}, nil
}

func (t Tree) fold(mayNormalize bool) (*fold.State, error) {
	s, hdr, stale := fold.NewState(), wire.SnapshotHeader{}, false
	if data, ok := t[SnapshotFile]; ok {
		var err error
		if s, hdr, err = decodeSnapshot(SnapshotFile, bytes.NewReader(data), nil); errors.Is(err, errStale) {
			s, stale = fold.NewState(), true // a union of two snapshots
		} else if err != nil {
			return nil, err
		}
	}
	led := t[LedgerFile]
	if hdr.TailBytes > 0 && int64(len(led)) >= hdr.TailBytes && wire.CrcHex(led[:hdr.TailBytes]) == hdr.TailCRC {
		led = led[hdr.TailBytes:]
	}
	var evs []*Event
	if !stale {
		var err error
		if evs, err = decodeAll(LedgerFile, led); err != nil {
			return nil, err
		}
		last := s.Last()
		stale = archiveFingerprint(t.archives()) != hdr.Archives && (hdr.V != 0 || len(t.archives()) > 0)
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
		return nil, Errorf(ErrCorrupt, "backlog files still disagree after normalizing")
	}
	all, err := decodeAll(LedgerFile, t[LedgerFile])
	if err != nil {
		return nil, err
	}
	norm, _, err := normalTree(t, all)
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
// opens the backlog (see normalize).
func MergeFiles(versions ...[]byte) ([]byte, error) {
	t, names := Tree{}, make([]string, len(versions))
	for i, data := range versions {
		names[i] = fmt.Sprintf("version %d", i+1)
		t[names[i]] = data
	}
	all, err := t.union(names...)
	if err != nil {
		return nil, err
	}
	return encodeEvents(all)
}
