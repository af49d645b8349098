package store

import (
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// HistoryFilter selects events for History. Zero fields match everything.
type HistoryFilter struct {
	Card  string
	Ops   []wire.Op
	Since time.Time   // events at or after this time
	From  wire.Cursor // events after this cursor
	Limit int         // stop after this many; 0 = all
}

// Matches reports whether e passes the filter's card, op and time tests.
func (f HistoryFilter) Matches(e *wire.Event) bool { return f.match(e) }

func (f *HistoryFilter) match(e *wire.Event) bool {
	return (f.Card == "" || e.Card == f.Card || (e.To == f.Card && (e.Op == wire.OpLink || e.Op == wire.OpUnlink))) &&
		(len(f.Ops) == 0 || slices.Contains(f.Ops, e.Op)) &&
		(f.Since.IsZero() || !e.At.Before(f.Since))
}

// ErrStop ends a History walk early without an error.
var ErrStop = errors.New("stop")

// History is ledger.Backlog.History: each event matching f, oldest first,
// across the archived segments and the ledger, with the conflict the fold
// recorded for it, and the cursor after the last event read.
func (b *Store) History(f HistoryFilter, fn func(e *wire.Event, conflict *wire.Conflict) error) (wire.Cursor, error) {
	b.mu.Lock()
	err := b.refresh()
	// Segments the snapshot does not vouch for (a git merge brought some
	// in) may hold one event under two stamps between them.
	across := b.normalForm
	b.mu.Unlock()
	if err != nil {
		return f.From, err
	}
	for i := range f.Ops {
		if !f.Ops[i].Known() {
			return f.From, wire.Rule(wire.ErrInvalid, "unknown op %q: use one of %s", f.Ops[i], OpNames())
		}
	}
	cur, n := f.From, 0
	walk := func(e *wire.Event) error {
		if !f.match(e) {
			return nil
		}
		if f.Limit > 0 && n >= f.Limit {
			return ErrStop
		}
		n++
		b.mu.Lock()
		c, bad := b.state.ConflictOf(e.ID)
		b.mu.Unlock()
		if bad {
			return fn(e, &c)
		}
		return fn(e, nil)
	}
	// A compaction may move ledger events into a new archive while this
	// walks; listing again until no new archive appears catches them, and
	// the cursor skips what was already seen.
	read := map[string]bool{}
	for {
		segs, err := Segments(b.dir)
		if err != nil {
			return cur, err
		}
		var fresh []string
		for _, path := range segs[:len(segs)-1] {
			if !read[path] {
				read[path] = true
				fresh = append(fresh, path)
			}
		}
		// The ledger joins the merge: a git merge can leave in it events
		// older than archived ones, out of order or repeated.
		cur, err = mergeEvents(fresh, segs[len(segs)-1], across, cur, walk)
		if errors.Is(err, ErrStop) {
			return cur, nil // the cursor stops just before the first event not delivered
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return cur, err
		}
		again, err := Segments(b.dir)
		if err != nil || len(again) == len(segs) {
			return cur, err
		}
	}
}

func OpNames() string {
	names := make([]string, len(wire.Ops))
	for i, o := range wire.Ops {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// ParseOps reads a comma-separated list of ops.
func ParseOps(s string) ([]wire.Op, error) {
	var ops []wire.Op
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !wire.Op(p).Known() {
			return nil, wire.Rule(wire.ErrInvalid, "unknown op %q: use one of %s", p, OpNames())
		}
		ops = append(ops, wire.Op(p))
	}
	return ops, nil
}
