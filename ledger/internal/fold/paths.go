package fold

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// MaxPathLen bounds one glob of a card's paths.
const MaxPathLen = 512

// MaxPathSegments bounds the segments of a glob a writer sets (create,
// update). The fold reads longer ones an older bl wrote: their overlaps
// are decided in polynomial time all the same (glob.go).
const MaxPathSegments = 32

// CheckNewPaths is the writer's check of the globs a create or update
// sets, beyond the fold's (ValidPath): at most MaxPathSegments segments.
func CheckNewPaths(paths []string) error {
	for _, p := range paths {
		if n := strings.Count(p, "/") + 1; n > MaxPathSegments {
			return wire.Rule(wire.ErrInvalid, "path %q has %d segments; a glob may have at most %d", clip(p), n, MaxPathSegments)
		}
	}
	return nil
}

// clip shortens a glob for a message.
func clip(p string) string {
	if len(p) > 40 {
		return p[:40] + "…"
	}
	return p
}

// checkPaths validates the globs a create or update sets.
func checkPaths(id string, paths *[]string) error {
	if paths == nil {
		return nil
	}
	if len(*paths) > wire.MaxListEntries {
		return wire.Rule(wire.ErrInvalid, "paths of %s has more than %d entries", id, wire.MaxListEntries)
	}
	for _, p := range *paths {
		if err := ValidPath(p); err != nil {
			return wire.Rule(wire.ErrInvalid, "paths of %s: %v", id, err)
		}
	}
	return nil
}

// ValidPath checks one glob of a card's paths: relative, clean, no "..",
// a well-formed pattern.
func ValidPath(p string) error {
	switch {
	case strings.TrimSpace(p) == "":
		return wire.Rule(wire.ErrInvalid, "an empty path")
	case len(p) > MaxPathLen:
		return wire.Rule(wire.ErrInvalid, "path %q is longer than %d bytes", clip(p), MaxPathLen)
	case strings.HasPrefix(p, "/"):
		return wire.Rule(wire.ErrInvalid, "path %q is absolute: name it from the repository root, without the leading /", p)
	case strings.ContainsAny(p, "\\\x00\n\r"):
		return wire.Rule(wire.ErrInvalid, "path %q holds a backslash or a control character", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return wire.Rule(wire.ErrInvalid, "path %q has an empty, . or .. segment", p)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return wire.Rule(wire.ErrInvalid, "path %q is not a valid glob: %v", p, err)
		}
	}
	return nil
}

// PathsOverlap reports whether some path could match both globs a and b
// (exactly, but for the cases glob.go names, where it says yes).
func PathsOverlap(a, b string) bool {
	return listsMeet(parseGlob(a), parseGlob(b), &meter{})
}

// globSegs splits a glob into its segments, with a "**" after a last
// segment without wildcards: a name may be a directory, which the glob then
// covers.
func globSegs(g string) []string {
	segs := strings.Split(g, "/")
	if !strings.ContainsAny(segs[len(segs)-1], globChars) {
		segs = append(segs, "**")
	}
	return segs
}

const globChars = "*?["

// PathMatches reports whether file (a slash-separated path from the
// repository root) is covered by glob.
func PathMatches(glob, file string) bool {
	return listsMeet(parseGlob(glob), literalSegs(strings.TrimPrefix(file, "./")), &meter{})
}

// PathHolders returns the cards that hold paths at now, in claim order.
// Only cards under a live lease or in review are read: the snapshot
// index lists them with their lease end (a card in review as never
// ending), so the cards that hold nothing are not read at all.
func (s *State) PathHolders(now time.Time) []*wire.Card {
	if s.held.ok && s.held.events == s.events && s.held.now.Equal(now) {
		return s.held.cards
	}
	complete := s.haveLeased(now)
	// Of a checkpoint's cards, only those in review or under a live lease
	// by their keys can hold paths.
	s.decodeKeyed(func(k CardKey) bool { return k.Status == wire.StatusReview || k.leased(now) })
	var out []*wire.Card
	for _, c := range s.cards {
		if c.HoldsPaths(now) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, ClaimOrder)
	if complete {
		s.held = heldCache{ok: true, events: s.events, now: now, cards: out}
	}
	return out
}

// heldCache keeps PathHolders' answer for the state and time it was
// computed at.
type heldCache struct {
	ok     bool
	events int64
	now    time.Time
	cards  []*wire.Card
}

// PathsHeldBy returns the first card other than c holding a path that
// overlaps c's paths at now, or nil. A card without paths is never held
// back, and costs nothing here.
func (s *State) PathsHeldBy(c *wire.Card, now time.Time) *wire.Card {
	if len(c.Paths) == 0 {
		return nil
	}
	for _, h := range s.PathHolders(now) {
		if h.ID != c.ID && s.overlapAny(h, c) {
			return h
		}
	}
	return nil
}

// overlapAny reports whether some glob of holder h overlaps some glob of
// c. A decision that cost much is kept for the two cards as they are (their
// versions), so a claim that decided it without the lock finds it decided
// under the lock.
func (s *State) overlapAny(h, c *wire.Card) bool {
	w := &s.paths
	k := pairKey{h.ID, c.ID, h.Version, c.Version}
	if v, ok := w.memo[k]; ok {
		return v
	}
	before := w.m.n
	v := false
	for _, x := range h.Paths {
		for _, y := range c.Paths {
			if v = s.overlap(x, y); v {
				break
			}
		}
		if v {
			break
		}
	}
	if w.m.stopped {
		return true
	}
	if w.m.n-before > memoCells {
		if w.memo == nil || len(w.memo) >= memoMax {
			w.memo = map[pairKey]bool{}
		}
		w.memo[k] = v
	}
	return v
}

// pairKey names a holder and a card, each at a version.
type pairKey struct {
	h, c   string
	hv, cv int64
}

// pathsWork bounds the overlap decisions of one call (SetPathsLimit) and
// keeps the answers that cost much (a claim decides them first under the
// lock, and if they run past its limit, again without it).
type pathsWork struct {
	m      meter
	memo   map[pairKey]bool
	parsed map[string][]segment
}

// parse is parseGlob, each glob parsed once.
func (w *pathsWork) parse(g string) []segment {
	if p, ok := w.parsed[g]; ok {
		return p
	}
	if w.parsed == nil || len(w.parsed) >= memoMax {
		w.parsed = map[string][]segment{}
	}
	p := parseGlob(g)
	w.parsed[g] = p
	return p
}

// memoCells: a decision between two cards that costs more than this
// (table cells, and one per pair of globs) is kept.
const memoCells = 1 << 10

// memoMax bounds the answers and parsed globs kept.
const memoMax = 1 << 16

// SetPathsLimit starts a call's overlap decisions: at most cells table
// cells (0: no limit), and stop asked every few thousand cells whether
// to give up. Past either, every decision answers "overlap" (the
// conservative side) and PathsStopped reports it.
func (s *State) SetPathsLimit(cells int64, stop func() bool) {
	m := &s.paths.m
	m.limit, m.stop, m.n, m.stopped = max(cells, 0), stop, 0, false
}

// PathsStopped reports whether the call's overlap decisions gave up: the
// limit ran out (PathsCut) or stop said so.
func (s *State) PathsStopped() (stopped, cut bool) {
	m := &s.paths.m
	return m.stopped, m.stopped && m.limit > 0 && m.n > m.limit
}

// overlap is PathsOverlap under the call's meter.
func (s *State) overlap(a, b string) bool {
	w := &s.paths
	if w.m.tick(1) {
		return true
	}
	return listsMeet(w.parse(a), w.parse(b), &w.m)
}

// ErrPathsHeld: the card's paths overlap paths another card holds (exit
// code 4, code "paths_held").
var ErrPathsHeld = fmt.Errorf("%w: paths held", wire.ErrConflict)

// HeldError says which card holds the paths c needs.
func HeldError(c, h *wire.Card) error {
	by := ""
	if h.Status == wire.StatusReview {
		by = " (in review)"
	} else if h.ClaimOwner != "" {
		by = " (claimed by " + h.ClaimOwner + ")"
	}
	return wire.Rule(ErrPathsHeld, "paths of %s overlap paths held by %s%s; claim it once %s is done or released", c.ID, h.ID, by, h.ID)
}

// Hold is a live reservation: a card holding paths, and who holds it.
type Hold struct {
	Card   string      `json:"card"`
	Owner  string      `json:"owner,omitempty"` // the lease owner; empty in review
	Status wire.Status `json:"status"`
	Paths  []string    `json:"paths"`
}
