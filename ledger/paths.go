package ledger

import (
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// Path reservations. A card may name the files its work touches as globs
// (paths). While it is claimed under a live lease, or in review, its
// paths are held: a claim passes over any card whose paths overlap the
// paths held by another card, and bl paths check refuses a commit of a
// file another owner holds.
//
// A glob is a slash-separated path relative to the repository root, in
// git's pathspec style with the glob magic: within a segment '*' matches
// any run of characters but '/', '?' one character, and [...] a class;
// a segment "**" matches any number of segments, none included. A glob
// whose last segment has no wildcard also covers everything below what it
// names, as a pathspec naming a directory does: "src/lexer" holds
// src/lexer/scan.go (while "src/*.go" holds no file below src/x.go/).
//
// Two globs overlap when some path could match both. The decision is
// conservative: it may answer yes for two globs no path matches both of
// (two segments with wildcards are told apart only by their literal
// prefixes and suffixes), never no for two that share a path. Each
// segment pair is decided so:
//
//	both literal            equal
//	one literal             the literal matches the other (path.Match)
//	both with wildcards     their literal prefixes agree (one starts the
//	                        other) and so do their literal suffixes
//
// and "**" on either side may stand for any number of the other's
// segments. TestPathsOverlap holds the table of cases.

// PathHolds returns the live reservations now, in claim order.
func (b *Backlog) PathHolds() (out []Hold, err error) {
	err = b.view(func(s *fold.State, now time.Time) error {
		for _, c := range s.PathHolders(now) {
			h := Hold{Card: c.ID, Status: c.Status, Paths: slices.Clone(c.Paths)}
			if c.Status == StatusClaimed {
				h.Owner = c.ClaimOwner
			} else {
				h.Owner = c.SubmittedBy
			}
			out = append(out, h)
		}
		return nil
	})
	return out, err
}
