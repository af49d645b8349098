package ledger

import (
	"context"
	"fmt"
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
// exact (a product of automata, fold/glob.go), in time polynomial in the
// globs' lengths; it errs only to the safe side: a class that matches no
// rune, and a decision stopped by LockedPathCells or a signal, count as
// overlapping. A writer sets globs of at most MaxPathSegments segments
// and MaxPathLen bytes. TestPathsOverlap holds the table of cases,
// TestPathsOverlapAgainstBruteForce the check against path.Match.

// LockedPathCells bounds the overlap decisions a write makes under the
// writers' lock: about 30 ms of table cells on a 2-core VM (a worst pair
// of 512-byte globs is about 260,000). Past it every further pair counts
// as overlapping, so a claim passes over the card as held; Claim then
// decides the pairs without the lock and tries once more.
const LockedPathCells = 1 << 21

// limitPaths starts a call's overlap decisions: at most cells table cells
// (0: no limit), stopped by ctx or Options.Interrupted.
func (b *Backlog) limitPaths(ctx context.Context, s *fold.State, cells int64) {
	s.SetPathsLimit(cells, func() bool {
		return ctx.Err() != nil || (b.opts.Interrupted != nil && b.opts.Interrupted())
	})
}

// pathsInterrupted is the error of a call whose overlap decisions a
// signal stopped.
func pathsInterrupted(ctx context.Context, s *fold.State) error {
	if stopped, cut := s.PathsStopped(); stopped && !cut {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted while deciding which paths overlap: %w", err)
		}
		return fmt.Errorf("interrupted while deciding which paths overlap: %w", context.Canceled)
	}
	return nil
}

// interruptible fails build when a signal stopped its overlap decisions:
// the answers it built on are not the state's, and the caller gave up.
func interruptible(ctx context.Context, build func(s *fold.State, at time.Time) ([]*Event, error)) func(s *fold.State, at time.Time) ([]*Event, error) {
	return func(s *fold.State, at time.Time) ([]*Event, error) {
		evs, err := build(s, at)
		if ierr := pathsInterrupted(ctx, s); ierr != nil {
			return nil, ierr
		}
		return evs, err
	}
}

// warmPaths decides, without the lock and with no limit but a signal,
// the overlaps a claim of r needs, so the write that follows finds them
// decided. It is called only when a write under the lock ran out of
// LockedPathCells.
func (b *Backlog) warmPaths(ctx context.Context, r ClaimRequest) error {
	return b.st.View(func(s *fold.State, now time.Time) error {
		b.policy(s)
		b.limitPaths(ctx, s, 0)
		err := s.Resolve(func() {
			if r.ID == "" {
				s.Pick(Filter{Phase: r.Phase, Label: r.Label}, now)
			} else if c := s.Find(r.ID); c != nil {
				s.PathsHeldBy(c, now)
			}
		})
		if err != nil {
			return err
		}
		return pathsInterrupted(ctx, s)
	})
}
