package repair

import (
	"fmt"
	"path"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// RebaseOnto is Rebase for trees that may leave segments unread: a
// segment upstream names without data is one the local tree holds too,
// with the same bytes (read or not). Such shared segments are not decoded:
// the events of upstream's other segments and ledger are compared with the
// local tree's other segments and ledger. A local event could still be in
// a shared segment only if it is no newer than the newest event a shared
// segment is named after; only then are the shared segments read, through
// load. The result names the shared segments unread as well, and its
// conflicts are not counted (the caller folds what it writes). A local
// card whose id upstream created too is renamed first (renameCollisions).
func RebaseOnto(upstream, local store.Tree, load store.Loader) (store.Tree, store.RebaseResult, error) {
	var res store.RebaseResult
	sh, err := sharedSegments(upstream, local, load)
	if err != nil {
		return nil, res, err
	}
	up, err := upstream.Union(sh.own(upstream)...)
	if err != nil {
		return nil, res, fmt.Errorf("upstream: %w", err)
	}
	mine, err := local.Union(sh.own(local)...)
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
	if res.Renamed, res.Twice, err = renameCollisions(up, mine, localOnly(up, sh), sh.created); err != nil {
		return nil, res, err
	}
	out := rebasedFiles(upstream, local)
	if out[store.LedgerFile], err = appendLocal(&res, upstream[store.LedgerFile], up, mine, sh); err != nil {
		return nil, res, err
	}
	return out, res, nil
}

// shared is the segments upstream names unread that the local tree holds
// too, with the same bytes: the rebase decodes them only when a local
// event could be in them.
type shared struct {
	names map[string]bool
	local store.Tree
	load  store.Loader
	last  *wire.Event     // the newest event they can hold (bound)
	ids   map[string]bool // their event ids, once read
	cards map[string]bool // the card ids they create, once read
}

// sharedSegments finds the shared segments of upstream and local.
func sharedSegments(upstream, local store.Tree, load store.Loader) (*shared, error) {
	sh := &shared{names: map[string]bool{}, local: local, load: load}
	for _, name := range upstream.Unread() {
		if _, ok := local[name]; !ok {
			return nil, fmt.Errorf("upstream: %s: not read, and the local backlog does not hold it", name)
		}
		if name != store.SnapshotFile { // the rebase never reads the snapshot
			sh.names[name] = true
		}
	}
	return sh, nil
}

// own is the event files of t that are not shared: its other segments
// and its ledger.
func (sh *shared) own(t store.Tree) []string {
	var names []string
	for _, name := range t.Archives() {
		if !sh.names[name] {
			names = append(names, name)
		}
	}
	return append(names, store.LedgerFile)
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
	sh.ids, sh.cards = map[string]bool{}, map[string]bool{}
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
		evs, err := store.DecodeAll(name, data)
		if err != nil {
			return err
		}
		for _, e := range evs {
			sh.ids[e.ID] = true
			if e.Op == wire.OpCreate {
				sh.cards[e.Card] = true
			}
			if sh.last == nil || sh.last.Before(e) {
				sh.last = e
			}
		}
	}
	return nil
}

// holds reports whether a shared segment holds e, reading them only when
// e is no newer than the newest event they can hold.
func (sh *shared) holds(e *wire.Event) (bool, error) {
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

// created reports whether a shared segment creates card, reading them
// (only a rename asks: a fresh id must be one no card has).
func (sh *shared) created(card string) (bool, error) {
	if len(sh.names) == 0 {
		return false, nil
	}
	if sh.ids == nil {
		if err := sh.read(); err != nil {
			return false, err
		}
	}
	return sh.cards[card], nil
}

// countPulled counts upstream's events the local tree lacks.
func countPulled(up, mine []*wire.Event, sh *shared) (int, error) {
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

// localOnly reports of an event whether only the local side holds it:
// upstream lacks it, in its own files and in the shared segments.
func localOnly(up []*wire.Event, sh *shared) func(*wire.Event) (bool, error) {
	var known map[string]bool // built at the first question: most rounds ask none
	return func(e *wire.Event) (bool, error) {
		if known == nil {
			known = make(map[string]bool, len(up))
			for _, e := range up {
				known[e.ID] = true
			}
		}
		if known[e.ID] {
			return false, nil
		}
		in, err := sh.holds(e)
		return !in, err
	}
}

// rebasedFiles is upstream's files, with the local settings files
// upstream lacks.
func rebasedFiles(upstream, local store.Tree) store.Tree {
	out := store.Tree{}
	for name, data := range upstream {
		out[name] = data
	}
	for _, name := range []string{store.ConfigFile, store.IgnoreFile, store.AttributesFile} {
		if _, ok := out[name]; !ok && local[name] != nil {
			out[name] = local[name]
		}
	}
	return out
}

// appendLocal is upstream's ledger with the local events upstream lacks
// appended, each stamped after the newest event before it (restamped
// when it is not), counted in res.
func appendLocal(res *store.RebaseResult, upLedger []byte, up, mine []*wire.Event, sh *shared) ([]byte, error) {
	known := make(map[string]*wire.Event, len(up))
	for _, e := range up {
		known[e.ID] = e
	}
	var last *wire.Event
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
		if u := known[e.ID]; u != nil {
			if !wire.SameCards(u, e) {
				return nil, renamedThere(u, e)
			}
			continue
		}
		if in, err := sh.holds(e); err != nil {
			return nil, err
		} else if in {
			continue
		}
		res.Local++
		if last != nil && !last.Before(e) {
			e = store.Restamp(e, last.At.Add(1))
			res.Restamped++
		}
		line, err := wire.EncodeLine(e)
		if err != nil {
			return nil, err
		}
		ledger = append(ledger, line...)
		last = e
	}
	return ledger, nil
}

// renamedThere refuses a rebase onto an upstream that holds an event of
// this clone under the cards it named before a rename (u; e is the
// local, renamed copy): it was pushed there, or fetched from here, before
// an earlier sync with another remote renamed its card. Taking upstream's
// copy would put the card back under the id the other clone created and
// fold that card's events onto it; keeping both is two events with one id.
func renamedThere(u, e *wire.Event) error {
	return wire.Errorf(wire.ErrIDCollision, "the remote holds event %s (%s of %s) as it was before a sync with another remote renamed a card it names (another clone had created that id); this clone holds it as %s of %s. Nothing was changed: taking the remote's copy would put the two cards together again; that remote's branch needs the renamed copy in place of the old one", e.ID, u.Op, u.Card, e.Op, e.Card)
}

// segmentNewest is the newest event a segment holds, as its name says
// (archive/<unix nanoseconds>-<event id>.jsonl); false when the name does
// not say.
func segmentNewest(name string) (*wire.Event, bool) {
	base := strings.TrimSuffix(path.Base(name), ".jsonl")
	c, err := wire.ParseCursor(base)
	if err != nil {
		return nil, false
	}
	return &wire.Event{At: c.At, ID: c.ID}, true
}
