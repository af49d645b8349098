package cli

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/bl-backlog/bl/ledger"
)

// A commit can hold a line of the event files that does not read: a
// teammate's damaged line, committed before any bl saw it. bl sync
// quarantines such a line as it arrives; bl diff, which reads commits
// nobody pulled, sets it aside the same way and compares the lines that
// read, naming each line set aside (side, commit, file, line) rather than
// failing on it.

// asideDiff is a comparison of two sides' trees through their loaders.
type asideDiff func(trees [2]ledger.Tree, loads [2]ledger.Loader) (*ledger.BacklogDiff, error)

// diffSettingAside runs diff on the sides' trees; when a line of their
// event files does not read, it runs it again with those lines set aside
// (ledger.QuarantineLines) and returns them. The trees are left as they
// are: the files are cleaned on copies.
// dir is the backlog directory, for the hint of damage it cannot set aside.
func diffSettingAside(dir string, sides [2]diffSide, trees [2]ledger.Tree, loads [2]ledger.Loader, diff asideDiff) (*ledger.BacklogDiff, []ledger.Quarantined, error) {
	d, err := diff(trees, loads)
	if !errors.Is(err, ledger.ErrCorrupt) {
		return d, nil, err
	}
	a := &aside{sides: sides, seen: map[string]bool{}}
	for i := range trees {
		t := make(ledger.Tree, len(trees[i]))
		for name, data := range trees[i] {
			t[name] = a.clean(i, name, data)
		}
		trees[i] = t
		if load := loads[i]; load != nil {
			loads[i] = func(name string) ([]byte, error) {
				data, err := load(name)
				if err != nil {
					return nil, err
				}
				return a.clean(i, name, data), nil
			}
		}
	}
	d, err = diff(trees, loads)
	if errors.Is(err, ledger.ErrCorrupt) {
		return nil, nil, damagedSide(dir, sides, trees, loads, diff, err)
	}
	if err != nil {
		return nil, nil, err
	}
	return d, a.lines, nil
}

// damagedSide is err, damage that setting lines aside does not mend (a
// snapshot that does not read), naming the side that holds it: each side
// is compared with itself to find it. The damage of a commit is not in
// the working files, which bl doctor checks: the hint says so.
func damagedSide(dir string, sides [2]diffSide, trees [2]ledger.Tree, loads [2]ledger.Loader, diff asideDiff, err error) error {
	for i := range sides {
		if _, serr := diff([2]ledger.Tree{trees[i], trees[i]}, [2]ledger.Loader{loads[i], loads[i]}); serr == nil {
			continue
		}
		err = fmt.Errorf("%s: %w", sides[i], err)
		if sides[i].Commit == "" || errors.Is(err, ledger.ErrVersion) {
			return err // the working backlog, or no damage (a newer bl's line): the usual hint holds
		}
		file := "<file>"
		if ce := (*ledger.CorruptError)(nil); errors.As(err, &ce) {
			file = ce.Path
		}
		if _, prefix, perr := backlogPrefix(dir); perr == nil {
			file = path.Join(prefix, file)
		}
		return hinted{err, fmt.Sprintf("the damage is in commit %.12s, not in the working backlog bl doctor checks; git show %.12s:%s shows the file as committed", sides[i].Commit, sides[i].Commit, file)}
	}
	return err
}

// aside collects the lines set aside, each once.
type aside struct {
	sides [2]diffSide
	mu    sync.Mutex
	seen  map[string]bool
	lines []ledger.Quarantined
}

// clean is data, a file of side i, with its lines that do not read taken
// out (the file itself when it is no event file or they all read).
func (a *aside) clean(i int, name string, data []byte) []byte {
	if data == nil || !(name == ledger.LedgerFile || strings.HasPrefix(name, ledger.ArchiveDir+"/")) {
		return data
	}
	from := a.sides[i].Rev
	if from == "" {
		from = "the working backlog"
	}
	out, bad := ledger.QuarantineLines(data, from, a.sides[i].Commit, name)
	if bad == nil {
		return data
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, q := range bad {
		key := fmt.Sprint(i, q.File, q.Line)
		if !a.seen[key] {
			a.seen[key] = true
			a.lines = append(a.lines, q)
		}
	}
	return out
}

// warnAside says, for each line set aside, where it is and why.
func warnAside(a *App, sides [2]diffSide, lines []ledger.Quarantined) {
	for _, q := range lines {
		where := "the working backlog"
		if q.Commit != "" {
			where = fmt.Sprintf("%s (commit %s)", q.From, q.Commit)
		}
		a.Warn(fmt.Sprintf("line %d of %s in %s does not read (%s): set aside, the diff compares the other lines", q.Line, q.File, where, q.Reason))
	}
}

// asideOn reports whether some of lines were set aside from side.
func asideOn(side diffSide, lines []ledger.Quarantined) bool {
	from := side.Rev
	if from == "" {
		from = "the working backlog"
	}
	for _, q := range lines {
		if q.From == from && q.Commit == side.Commit {
			return true
		}
	}
	return false
}
