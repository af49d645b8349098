package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bl-backlog/bl/lock"
)

// Damage is one damaged or misplaced line found by Diagnose.
type Damage struct {
	Line       int    `json:"line"`
	Offset     int64  `json:"offset"`
	Kind       string `json:"kind"` // checksum, version, duplicate, order
	Reason     string `json:"reason"`
	Repairable bool   `json:"repairable"`
}

// ExpiredLease is a lease that has run out but not been reclaimed.
type ExpiredLease struct {
	Card      string    `json:"card"`
	Owner     string    `json:"owner"`
	Epoch     int64     `json:"epoch"`
	ExpiredAt time.Time `json:"expired_at"`
}

// Report is the integrity check of a backlog.
type Report struct {
	Dir                string         `json:"dir"`
	Corrupt            bool           `json:"corrupt"` // damage that blocks reads or writes (every kind but "stale")
	Lines              int            `json:"lines"`
	Bytes              int64          `json:"bytes"`
	Cards              int            `json:"cards"`
	TornTail           *TornTail      `json:"torn_tail"`
	Damage             []Damage       `json:"damage"`
	Conflicts          []Conflict     `json:"conflicts"`
	ExpiredLeases      []ExpiredLease `json:"expired_leases"`
	DependencyProblems []string       `json:"dependency_problems"`
	Repaired           []string       `json:"repaired"`
	// Events written by a clock more than MaxClockSkew ahead of now, and
	// how far the newest stamp runs ahead of now (see futureEvents).
	FutureEvents       []FutureEvent `json:"future_events"`
	StampsAheadSeconds float64       `json:"stamps_ahead_seconds"`
}

// rawLine is one line of the ledger file as doctor sees it.
type rawLine struct {
	n      int
	offset int64
	bytes  []byte
	event  *Event
	err    error
}

// Diagnose reads the whole ledger of dir without the lock and reports its
// integrity, conflicts, expired leases at now and dependency problems. It
// never changes anything.
func Diagnose(dir string, now time.Time) (*Report, error) {
	r, _, err := diagnose(dir, now)
	return r, err
}

func diagnose(dir string, now time.Time) (*Report, []rawLine, error) {
	data, err := os.ReadFile(filepath.Join(dir, LedgerFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, Errorf(ErrNotInitialized, "%s has no %s", dir, LedgerFile)
		}
		return nil, nil, err
	}
	rep := &Report{Dir: dir, Bytes: int64(len(data)), Damage: []Damage{}, Conflicts: []Conflict{},
		ExpiredLeases: []ExpiredLease{}, DependencyProblems: []string{}, Repaired: []string{}}
	var lines []rawLine
	for off := int64(0); off < int64(len(data)); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 { // unterminated final line
			rep.TornTail = &TornTail{Line: len(lines) + 1, Offset: off, Bytes: int64(len(data)) - off, Reason: "unterminated final line"}
			break
		}
		b := data[off : off+int64(end)+1]
		e, derr := DecodeLine(b)
		lines = append(lines, rawLine{n: len(lines) + 1, offset: off, bytes: b, event: e, err: derr})
		off += int64(len(b))
	}
	// Damaged lines after the last good one are a torn tail, not damage.
	lastGood := -1
	for i, l := range lines {
		if l.err == nil {
			lastGood = i
		}
	}
	if lastGood+1 < len(lines) && !errors.Is(lines[lastGood+1].err, ErrVersion) {
		t := lines[lastGood+1]
		rep.TornTail = &TornTail{Line: t.n, Offset: t.offset, Bytes: int64(len(data)) - t.offset, Reason: t.err.Error()}
		lines = lines[:lastGood+1]
	}
	rep.Lines = len(lines)

	s, hdr, err := loadSnapshot(dir)
	if err != nil {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			return nil, nil, err
		}
		rep.Damage = append(rep.Damage, Damage{Line: ce.Line, Offset: ce.Offset, Kind: "snapshot", Reason: ce.Error()})
		s = NewState()
	}
	pos, err := snapshotPosition(dir, s, hdr)
	if errors.Is(err, errStale) {
		rep.Damage = append(rep.Damage, Damage{Kind: "stale", Repairable: true,
			Reason: "archive/ holds other segments than the snapshot folded (a git merge?); repair rebuilds the snapshot"})
	} else if err != nil {
		return nil, nil, err
	}
	seen := map[string]int{} // event id -> index in lines
	prev := pos.snap
	for i, l := range lines {
		if l.offset < pos.base {
			continue // folded into the snapshot by a compaction cut short
		}
		if l.err == nil && prev != nil && prev == pos.snap && !prev.before(l.event) {
			rep.Damage = append(rep.Damage, Damage{Line: l.n, Offset: l.offset, Kind: "stale", Repairable: true,
				Reason: fmt.Sprintf("event %s at %s is not after the snapshot's newest event %s (a git merge?); repair moves it into an archive segment", l.event.ID, l.event.At.Format(timeLayout), prev.ID)})
			seen[l.event.ID] = i
			continue
		}
		if l.err != nil {
			kind := "checksum"
			if errors.Is(l.err, ErrVersion) {
				kind = "version"
			}
			rep.Damage = append(rep.Damage, Damage{Line: l.n, Offset: l.offset, Kind: kind, Reason: l.err.Error()})
			continue
		}
		if j, dup := seen[l.event.ID]; dup {
			same := bytes.Equal(lines[j].bytes, l.bytes)
			reason := fmt.Sprintf("repeats line %d (event %s)", lines[j].n, l.event.ID)
			if !same {
				reason = fmt.Sprintf("event id %s is also used by the different line %d", l.event.ID, lines[j].n)
			}
			rep.Damage = append(rep.Damage, Damage{Line: l.n, Offset: l.offset, Kind: "duplicate", Reason: reason, Repairable: same})
			continue
		}
		seen[l.event.ID] = i
		if prev != nil && !prev.before(l.event) {
			rep.Damage = append(rep.Damage, Damage{Line: l.n, Offset: l.offset, Kind: "order", Repairable: true,
				Reason: fmt.Sprintf("event %s at %s is not after event %s at %s", l.event.ID, l.event.At.Format(timeLayout), prev.ID, prev.At.Format(timeLayout))})
		}
		prev = l.event
		_ = s.Apply(l.event) // conflicts are recorded in the state
	}
	// A stale snapshot (a compaction cut short, a git merge) blocks
	// nothing: the next open rebuilds it. Everything else is damage.
	rep.Corrupt = slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.Kind != "stale" })
	if !rep.Corrupt && len(rep.Damage) > 0 {
		// Stale: report on the backlog as the next open will see it.
		if t, err := ReadTree(dir); err == nil {
			var led []*Event
			for _, l := range lines {
				led = append(led, l.event)
			}
			if norm, err := normalTree(t, led); err == nil {
				if ns, err := norm.fold(false); err == nil {
					s = ns
				}
			}
		}
	}
	rep.Cards = s.Len()
	rep.Conflicts = append(rep.Conflicts, s.conflicts...)
	for _, id := range s.Expired(now) {
		c := s.card(id)
		rep.ExpiredLeases = append(rep.ExpiredLeases, ExpiredLease{Card: id, Owner: c.ClaimOwner, Epoch: c.ClaimEpoch, ExpiredAt: *c.LeaseExpiresAt})
	}
	rep.DependencyProblems = append(rep.DependencyProblems, s.dependencyProblems()...)
	evs := make([]*Event, 0, len(lines))
	for _, l := range lines {
		if l.event != nil {
			evs = append(evs, l.event)
		}
	}
	rep.FutureEvents, rep.StampsAheadSeconds = futureEvents(evs, s.Last(), now)
	return rep, lines, nil
}

// dependencyProblems lists cards that cannot become claimable on their own:
// waiting on a blocked or missing card, or with a missing parent.
func (s *State) dependencyProblems() []string {
	var out []string
	s.all()
	for _, c := range s.cards {
		if c.Status == StatusDone {
			continue
		}
		for _, d := range c.DependsOn {
			switch dc := s.cards[d]; {
			case dc == nil:
				out = append(out, fmt.Sprintf("%s depends on %s, which does not exist", c.ID, d))
			case dc.Status == StatusBlocked:
				out = append(out, fmt.Sprintf("%s waits on %s, which is blocked: %s", c.ID, d, orDash(dc.BlockedReason)))
			}
		}
		if c.Parent != "" && s.cards[c.Parent] == nil {
			out = append(out, fmt.Sprintf("%s has parent %s, which does not exist", c.ID, c.Parent))
		}
	}
	slices.Sort(out)
	return out
}

// Repair takes the lock and fixes what can be fixed without losing an
// event: a torn tail is set aside into ledger.jsonl.broken, exact duplicate
// lines are dropped (copied to .broken first), and misordered lines are put
// back in (at, id) order. Damage that would lose an event (a checksum
// failure mid-file, a line from a newer bl, two different lines sharing an
// event id) is left alone and reported as ErrCorrupt. The returned report
// describes the ledger after repair, with Repaired saying what was done.
func Repair(ctx context.Context, dir string, timeout time.Duration, now time.Time) (*Report, error) {
	lk := lock.New(filepath.Join(dir, LockFile))
	if err := lk.Acquire(ctx, timeout); err != nil {
		return nil, err
	}
	defer lk.Release()
	// Finish (or drop) a multi-file change cut short before judging the
	// files, as every opener does.
	if err := rollForward(dir); err != nil {
		return nil, err
	}
	removeTemps(dir)
	rep, lines, err := diagnose(dir, now)
	if err != nil {
		return nil, err
	}
	for _, d := range rep.Damage {
		if !d.Repairable {
			return rep, Errorf(ErrCorrupt, "%s line %d (byte offset %d): %s; it cannot be repaired without losing an event: restore the ledger from git (git log -p -- %s) and run bl doctor again",
				filepath.Join(dir, LedgerFile), d.Line, d.Offset, d.Reason, LedgerFile)
		}
	}
	var done []string
	stale := slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.Kind == "stale" })
	if stale {
		if err := normalize(dir); err != nil {
			return rep, err
		}
		done = append(done, "rebuilt the snapshot and archive segments from every event the backlog holds")
		rep.TornTail = nil // normalize set it aside
	} else if len(rep.Damage) > 0 {
		if err := rewriteCanonical(dir, lines, rep.TornTail); err != nil {
			return rep, err
		}
		done = append(done, fmt.Sprintf("rewrote %s in (at, id) order without %d duplicate or misplaced line(s); originals copied to %s", LedgerFile, len(rep.Damage), BrokenFile))
	} else if rep.TornTail != nil {
		if err := setAside(dir, rep.TornTail); err != nil {
			return rep, err
		}
	}
	if rep.TornTail != nil {
		done = append(done, fmt.Sprintf("set aside a torn tail of %d bytes at line %d into %s", rep.TornTail.Bytes, rep.TornTail.Line, BrokenFile))
	}
	after, _, err := diagnose(dir, now)
	if err != nil {
		return nil, err
	}
	after.Repaired = append(after.Repaired, done...)
	return after, nil
}

// rewriteCanonical replaces the ledger with its good lines, each event once,
// sorted by (at, id), atomically: temp file, fsync, rename, fsync dir. The
// dropped lines and any torn tail go to the .broken file first.
func rewriteCanonical(dir string, lines []rawLine, torn *TornTail) (err error) {
	seen := map[string]bool{}
	var keep []rawLine
	var dropped []byte
	for _, l := range lines {
		if seen[l.event.ID] {
			dropped = append(dropped, l.bytes...)
			continue
		}
		seen[l.event.ID] = true
		keep = append(keep, l)
	}
	slices.SortStableFunc(keep, func(a, b rawLine) int {
		if a.event.before(b.event) {
			return -1
		}
		if b.event.before(a.event) {
			return 1
		}
		return 0
	})
	path := filepath.Join(dir, LedgerFile)
	if torn != nil {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dropped = append(dropped, data[torn.Offset:]...)
		if !bytes.HasSuffix(dropped, []byte{'\n'}) {
			dropped = append(dropped, '\n')
		}
	}
	if len(dropped) > 0 {
		if err := appendSync(filepath.Join(dir, BrokenFile), dropped); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	for _, l := range keep {
		buf.Write(l.bytes)
	}
	return replaceFile(path, buf.Bytes(), nil)
}

// replaceFile atomically replaces path with data: temp file in the same
// directory, write, fsync, rename, fsync the directory. mid, when set, runs
// halfway through the write (a crash-test failpoint).
func replaceFile(path string, data []byte, mid func()) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o644); err != nil { // CreateTemp makes 0600
		return err
	}
	half := len(data) / 2
	if _, err = tmp.Write(data[:half]); err != nil {
		return err
	}
	if mid != nil {
		mid()
	}
	if _, err = tmp.Write(data[half:]); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}
