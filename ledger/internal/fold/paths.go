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
		return wire.Rule(wire.ErrInvalid, "path %q is longer than %d bytes", p[:32]+"…", MaxPathLen)
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
// (conservatively: see the rules above).
func PathsOverlap(a, b string) bool {
	return segsOverlap(globSegs(a), globSegs(b))
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

func segsOverlap(a, b []string) bool {
	switch {
	case len(a) == 0 && len(b) == 0:
		return true
	case len(a) > 0 && a[0] == "**":
		// ** stands for none of b's segments, or for b's first and maybe more.
		return segsOverlap(a[1:], b) || (len(b) > 0 && segsOverlap(a, b[1:]))
	case len(b) > 0 && b[0] == "**":
		return segsOverlap(a, b[1:]) || (len(a) > 0 && segsOverlap(a[1:], b))
	case len(a) == 0 || len(b) == 0:
		return false
	}
	return segOverlap(a[0], b[0]) && segsOverlap(a[1:], b[1:])
}

const globChars = "*?["

// segOverlap reports whether one path segment could match both x and y.
func segOverlap(x, y string) bool {
	xw, yw := strings.ContainsAny(x, globChars), strings.ContainsAny(y, globChars)
	switch {
	case !xw && !yw:
		return x == y
	case !xw:
		ok, _ := path.Match(y, x)
		return ok
	case !yw:
		ok, _ := path.Match(x, y)
		return ok
	}
	xp, yp := x[:strings.IndexAny(x, globChars)], y[:strings.IndexAny(y, globChars)]
	if !strings.HasPrefix(xp, yp) && !strings.HasPrefix(yp, xp) {
		return false
	}
	xs, ys := x[strings.LastIndexAny(x, globChars+"]")+1:], y[strings.LastIndexAny(y, globChars+"]")+1:]
	return strings.HasSuffix(xs, ys) || strings.HasSuffix(ys, xs)
}

// PathMatches reports whether file (a slash-separated path from the
// repository root) is covered by glob.
func PathMatches(glob, file string) bool {
	return segsMatch(globSegs(glob), strings.Split(strings.TrimPrefix(file, "./"), "/"))
}

func segsMatch(g, f []string) bool {
	switch {
	case len(g) == 0:
		return len(f) == 0
	case g[0] == "**":
		return segsMatch(g[1:], f) || (len(f) > 0 && segsMatch(g, f[1:]))
	case len(f) == 0:
		return false
	}
	ok, _ := path.Match(g[0], f[0])
	return ok && segsMatch(g[1:], f[1:])
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
		if h.ID != c.ID && overlapAny(h.Paths, c.Paths) {
			return h
		}
	}
	return nil
}

func overlapAny(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if PathsOverlap(x, y) {
				return true
			}
		}
	}
	return false
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
