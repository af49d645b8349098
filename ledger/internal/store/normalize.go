package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Normalize rewrites a backlog whose files disagree — typically after a git
// merge brought in archive segments, ledger lines or a second snapshot from
// another branch — into the normal form, the way a compaction does: the
// ledger's events that no archive segment holds go, sorted and each once,
// into a new segment named after the newest of them; a segment git merged
// out of order is written back sorted (the same events); the snapshot
// becomes the fold of every segment and the ledger is emptied. Nothing is
// reordered past the snapshot and nothing is lost. The caller holds the
// lock. The change is journaled. A torn tail of the ledger is set aside
// first and returned, for the caller to say so.
//
// lost is what the snapshot said it folded beyond the events the files
// hold (see NormalTree); the caller says so.
func Normalize(dir string) (torn *wire.TornTail, lost *LostEvents, err error) {
	prev, err := ReadTree(dir)
	if err != nil {
		return nil, nil, err
	}
	led, _, torn, err := wire.ReadEventsData(filepath.Join(dir, LedgerFile), prev[LedgerFile])
	if err != nil {
		return nil, nil, err
	}
	if torn != nil { // set it aside first
		if err := SetAside(dir, torn); err != nil {
			return nil, nil, err
		}
		prev[LedgerFile] = prev[LedgerFile][:torn.Offset]
	}
	next, lost, err := NormalTree(prev, led)
	if err != nil {
		return torn, nil, err
	}
	return torn, lost, writeTree(dir, prev, next)
}

// LostEvents is a snapshot that says it folds more events than the archive
// segments and the ledger hold: a git revert or reset of a commit that
// compacted took a segment out, and the snapshot (rewritten by a later
// commit, or a union of two) still counts its events. The snapshot is a
// cache of the events, so it is stale, not damage: bl folds the events the
// files hold, and the next write rebuilds the snapshot from them.
type LostEvents struct {
	Claimed int64 `json:"claimed"` // events the snapshot says it folds
	Held    int64 `json:"held"`    // events the files hold
}

func (l *LostEvents) String() string {
	return fmt.Sprintf("%s folds %d events but the archive segments and the ledger hold %d: a git revert or reset took %d out of the files; "+
		"bl reads the %d events the files hold and the next write rebuilds the snapshot from them. The events come back at the next merge of a branch that has them; "+
		"undo with bl commands instead (bl reopen, unblock, update, release)", SnapshotFile, l.Claimed, l.Held, l.Claimed-l.Held, l.Held)
}

// NormalTree computes the normal form of a tree whose ledger holds led:
// every archive segment sorted, each event once and only under the stamp
// that stands (see settle.go); the events of led that no segment holds in
// a new segment; the snapshot the fold of all segments;
// an empty ledger. lost is non-nil when t's snapshot says it folds more
// events than that: it is rebuilt from the events there are.
func NormalTree(t Tree, led []*wire.Event) (_ Tree, lost *LostEvents, err error) {
	out := Tree{}
	for name, data := range t {
		if name != SnapshotFile && name != LedgerFile {
			out[name] = data
		}
	}
	for _, name := range t.Archives() {
		data, err := SettleData(name, t[name])
		if err != nil {
			return nil, nil, err
		}
		out[name] = data
	}
	archived, err := out.Union(out.Archives()...)
	if err != nil {
		return nil, nil, err
	}
	// The ledger's events no segment holds as they stand: new ones, and
	// later stamps of archived ones (settle.go), which join a new segment.
	inArchive := make(map[*wire.Event]bool, len(archived))
	for _, e := range archived {
		inArchive[e] = true
	}
	all, err := wire.SettleEvents(append(slices.Clone(archived), led...))
	if err != nil {
		return nil, nil, err
	}
	if err := dropOutranked(out, all); err != nil {
		return nil, nil, err
	}
	var rest []*wire.Event
	for _, e := range all {
		if !inArchive[e] {
			rest = append(rest, e)
		}
	}
	if len(rest) > 0 {
		name := ArchiveName(*rest[len(rest)-1])
		if old, ok := out[name]; ok { // the same name: keep both sets of lines
			evs, err := DecodeAll(name, old)
			if err != nil {
				return nil, nil, err
			}
			if rest, err = wire.SettleEvents(append(rest, evs...)); err != nil {
				return nil, nil, err
			}
		}
		data, err := EncodeEvents(rest)
		if err != nil {
			return nil, nil, err
		}
		out[name] = data
		archived = all
	}
	if n := SnapshotClaims(t[SnapshotFile]); n > int64(len(archived)) {
		lost = &LostEvents{Claimed: n, Held: int64(len(archived))}
	}
	if len(archived) > 0 {
		s := fold.Fold(archived)
		snap, _, err := EncodeSnapshot(s, out.Archives(), nil)
		if err != nil {
			return nil, nil, err
		}
		out[SnapshotFile] = snap
	}
	out[LedgerFile] = []byte{}
	return out, lost, nil
}

// dropOutranked takes out of t's segments every copy of an event that a
// later stamp outranks (all holds the copies that stand): in the normal
// form each event is held under its standing stamp alone, so a history
// read can trust a segment set the snapshot vouches for. A segment left
// empty goes.
func dropOutranked(t Tree, all []*wire.Event) error {
	stands := make(map[string]*wire.Event, len(all))
	for _, e := range all {
		stands[e.ID] = e
	}
	for _, name := range t.Archives() {
		evs, err := DecodeAll(name, t[name])
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(evs), func(e *wire.Event) bool {
			w := stands[e.ID]
			return w != nil && wire.LaterCopy(w, e)
		})
		switch {
		case len(kept) == len(evs):
		case len(kept) == 0:
			delete(t, name)
		default:
			if t[name], err = EncodeEvents(kept); err != nil {
				return err
			}
		}
	}
	return nil
}

func EncodeEvents(evs []*wire.Event) ([]byte, error) {
	var out []byte
	for _, e := range evs {
		line, err := wire.EncodeLine(e)
		if err != nil {
			return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
		}
		out = append(out, line...)
	}
	return out, nil
}

// SettleData returns the event lines of an in-memory ledger or archive file
// sorted by (at, id), each event once, every line ended: the form bl writes
// a file in (see settleLines). A torn tail is damage here: the data is
// written whole.
func SettleData(path string, data []byte) ([]byte, error) {
	lr := wire.NewLineReader(path, bytes.NewReader(data), wire.LineStart{}, min(len(data), wire.FileBufSize))
	evs, _, torn, err := settleLines(lr)
	if err != nil {
		return nil, err
	}
	if torn != nil {
		return nil, &wire.CorruptError{Path: path, Line: torn.Line, Offset: torn.Offset, Err: fmt.Errorf("%w: %s", wire.ErrFraming, torn.Reason)}
	}
	out := make([]byte, 0, len(data))
	for _, s := range evs {
		out = append(out, s.line...)
		if !bytes.HasSuffix(s.line, []byte{'\n'}) {
			out = append(out, '\n')
		}
	}
	return out, nil
}
