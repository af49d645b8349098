package ledger

import (
	"fmt"
	"path/filepath"
	"slices"
)

// normalize rewrites a backlog whose files disagree — typically after a git
// merge brought in archive segments or ledger lines from another branch —
// into the normal form: every archived event once in archive segments, the
// snapshot the fold of exactly those, and the ledger only events after
// them. Ledger events that sort before the newest archived event go into a
// new segment of their own, so nothing is reordered past the snapshot and
// nothing is lost. The caller holds the lock. The change is journaled. A
// torn tail of the ledger is set aside first and returned, for the caller
// to say so.
func normalize(dir string) (*TornTail, error) {
	prev, err := ReadTree(dir)
	if err != nil {
		return nil, err
	}
	led, _, torn, err := readEventsData(filepath.Join(dir, LedgerFile), prev[LedgerFile])
	if err != nil {
		return nil, err
	}
	if torn != nil { // set it aside first
		if err := setAside(dir, torn); err != nil {
			return nil, err
		}
		prev[LedgerFile] = prev[LedgerFile][:torn.Offset]
	}
	next, err := normalTree(prev, led)
	if err != nil {
		return torn, err
	}
	b := &Backlog{dir: dir}
	return torn, b.writeTree(prev, next)
}

// normalTree computes the normal form of a tree whose ledger holds led.
func normalTree(t Tree, led []*Event) (Tree, error) {
	archived, err := t.union(t.archives()...)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(archived))
	for _, e := range archived {
		seen[e.ID] = true
	}
	var newest *Event
	if len(archived) > 0 {
		newest = archived[len(archived)-1]
	}
	var stragglers, rest []*Event
	for _, e := range led {
		switch {
		case seen[e.ID]:
		case newest != nil && !newest.before(e):
			stragglers = append(stragglers, e)
		default:
			rest = append(rest, e)
		}
		seen[e.ID] = true
	}
	slices.SortStableFunc(stragglers, byAtID)
	slices.SortStableFunc(rest, byAtID)

	out := Tree{}
	for name, data := range t {
		if name != SnapshotFile && name != LedgerFile {
			out[name] = data
		}
	}
	if len(stragglers) > 0 {
		last := stragglers[len(stragglers)-1]
		name := archiveName(*last)
		if old, ok := out[name]; ok { // the same name: keep both sets of lines
			evs, err := decodeAll(name, old)
			if err != nil {
				return nil, err
			}
			stragglers = append(stragglers, evs...)
			slices.SortStableFunc(stragglers, byAtID)
			stragglers = slices.CompactFunc(stragglers, func(a, b *Event) bool { return a.ID == b.ID })
		}
		data, err := encodeEvents(stragglers)
		if err != nil {
			return nil, err
		}
		out[name] = data
		archived = append(archived, stragglers...)
		slices.SortStableFunc(archived, byAtID)
		archived = slices.CompactFunc(archived, func(a, b *Event) bool { return a.ID == b.ID })
	}
	if len(archived) > 0 {
		s := Fold(archived)
		snap, _, err := s.encodeSnapshot(out.archives(), nil)
		if err != nil {
			return nil, err
		}
		out[SnapshotFile] = snap
	}
	data, err := encodeEvents(rest)
	if err != nil {
		return nil, err
	}
	out[LedgerFile] = data
	return out, nil
}

func encodeEvents(evs []*Event) ([]byte, error) {
	var out []byte
	for _, e := range evs {
		line, err := EncodeLine(e)
		if err != nil {
			return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
		}
		out = append(out, line...)
	}
	return out, nil
}
