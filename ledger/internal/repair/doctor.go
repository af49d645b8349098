// Package repair is what bl doctor reads and repairs in a backlog
// directory (Diagnose, Repair, the refold that checks a snapshot against
// its events) and the rebase of a sync round (RebaseOnto), on top of
// package store. Package ledger gives them to its callers.
package repair

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Damage is one damaged or misplaced line found by Diagnose.
type Damage struct {
	File       string `json:"file"` // relative to the backlog: ledger.jsonl, snapshot.json, archive/...
	Line       int    `json:"line"`
	Offset     int64  `json:"offset"`
	Kind       string `json:"kind"` // checksum, framing, blank, version, duplicate, conflict-markers, snapshot, archive; "stale" in Report.Stale
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

// SetAside describes ledger.jsonl.broken: what writers set aside.
type SetAside struct {
	Bytes int64 `json:"bytes"`
	// Events counts lines in it that are valid events the backlog does
	// not hold (an older bl set aside complete lines it took for torn).
	Events int `json:"events"`
}

// Report is the integrity check of a backlog.
type Report struct {
	Dir string `json:"dir"`
	// Warnings are what is not damage but needs the user: a lock file
	// git tracks (a pull or checkout may replace it under running bl).
	Warnings []string `json:"warnings,omitempty"`
	Corrupt  bool     `json:"corrupt"` // Damage is not empty: it blocks reads or writes
	Lines    int      `json:"lines"`
	Bytes    int64    `json:"bytes"`
	Cards    int      `json:"cards"`
	// CRLFLines counts ledger lines ending in "\r\n" (a CRLF checkout);
	// they read as the same events.
	CRLFLines int `json:"crlf_lines"`
	// LostNewline is the number of the ledger's last line when it is an
	// event without its newline (0 otherwise); the next write restores it.
	LostNewline int `json:"lost_newline"`
	// Unsorted and Repeated count ledger lines a git union merge left out
	// of (at, id) order or twice. They read as the sorted file, each event
	// once: not damage, nothing to repair.
	Unsorted int `json:"unsorted_lines"`
	Repeated int `json:"repeated_lines"`
	// Restamped counts ledger lines that repeat an event with another
	// stamp (bl sync re-stamps a local event it moves after the remote's
	// history; a git merge can bring the first stamp back): the later
	// stamp counts, nothing to repair.
	Restamped int            `json:"restamped_lines"`
	TornTail  *wire.TornTail `json:"torn_tail"`
	SetAside  *SetAside      `json:"set_aside"` // nil when there is no ledger.jsonl.broken
	// Leftover is the archive segment a compaction that did not finish
	// (a full disk, a kill) wrote before its snapshot: every event in it
	// is still in the ledger, loads ignore it and the next compaction
	// removes it. "" when there is none.
	Leftover string `json:"leftover_segment,omitempty"`
	// Damage is what blocks reads or writes. Stale is what the files say
	// that the events they hold outdate — a union of two snapshots after a
	// git merge, archive segments the snapshot did not fold, ledger lines
	// older than the snapshot, a snapshot counting events a revert took
	// out: the ordinary result of a merge or a revert, read as the fold of
	// the events and rebuilt by the next write; never damage.
	Damage []Damage `json:"damage"`
	Stale  []Damage `json:"stale"`
	// LostEvents is set when the snapshot says it folds more events than
	// the files hold (a git revert or reset of a compaction).
	LostEvents *store.LostEvents `json:"lost_events"`
	Conflicts  []wire.Conflict   `json:"conflicts"`
	// SelfApprovals are the conflicts that are verdicts by whoever sent
	// the card to review, refused by the gate: an older bl let them fold.
	SelfApprovals      []wire.Conflict `json:"self_approvals"`
	ExpiredLeases      []ExpiredLease  `json:"expired_leases"`
	DependencyProblems []string        `json:"dependency_problems"`
	Repaired           []string        `json:"repaired"`
	// Events written by a clock more than MaxClockSkew ahead of now, and
	// how far the newest stamp runs ahead of now (see store.FutureEvents).
	FutureEvents       []store.FutureEvent `json:"future_events"`
	StampsAheadSeconds float64             `json:"stamps_ahead_seconds"`
	// Missing is history this clone saw that the files no longer hold (a
	// git revert or reset), from Backlog.CheckSeen; nil when none.
	Missing *store.MissingEvents `json:"missing_events"`
	// Quarantined lists the lines a sync set aside as they arrived from
	// another clone (QuarantineFile).
	Quarantined []store.Quarantined `json:"quarantined,omitempty"`
	// TrackedLocal lists the files git tracks that are local to each
	// clone by design (store.TrackedLocal): a teammate's, never believed.
	TrackedLocal []string `json:"tracked_local,omitempty"`
	// LocalLinks lists the symbolic links below cache/ (store.LocalLinks):
	// bl writes none of its local files through them.
	LocalLinks []string `json:"local_links,omitempty"`
	// CreatedTwice are the cards two clones created, whose creates a git
	// merge brought together (fold.CreatedTwice). Nothing in the events
	// says which card a later event was meant for, so --repair leaves
	// them.
	CreatedTwice []CreatedTwice `json:"created_twice"`
}

// CreatedTwice is a card id two clones created. Refused is the second
// create, which the fold recorded as a conflict; Kept the first, when the
// ledger holds it (not yet compacted). Later counts the events on the
// card after the refused create, in the ledger, by actor: they all folded
// onto the first card, whichever card their writer meant.
type CreatedTwice struct {
	Card    string         `json:"card"`
	Refused wire.Conflict  `json:"refused"`
	Kept    *wire.Conflict `json:"kept,omitempty"`
	Later   map[string]int `json:"later_by_actor"`
}

// createdTwice describes the refused create c from the ledger's events;
// false when it carried the idempotency key of card, the card kept: one
// request made on two clones (bl import of one source), one card.
func createdTwice(c wire.Conflict, evs []*wire.Event, card *wire.Card) (CreatedTwice, bool) {
	out := CreatedTwice{Card: c.Card, Refused: c, Later: map[string]int{}}
	after := false
	for _, e := range evs {
		switch {
		case e.ID == c.Event:
			if card != nil && e.Fields != nil && e.Fields.IdempotencyKey != "" && e.Fields.IdempotencyKey == card.IdempotencyKey {
				return out, false
			}
			after = true
		case e.Op == wire.OpCreate && e.Card == c.Card && out.Kept == nil:
			out.Kept = &wire.Conflict{Event: e.ID, At: e.At.Format(wire.TimeLayout), Op: e.Op, Card: e.Card, Actor: e.Actor}
		case after && e.NamesCard(c.Card):
			out.Later[e.Actor]++
		}
	}
	return out, true
}

// rawLine is one line of the ledger file as doctor sees it.
type rawLine struct {
	n      int
	offset int64
	bytes  []byte      // line end included, if it has one
	event  *wire.Event // nil when the line is damaged
	err    error
}

// Diagnose reads the whole ledger of dir and reports its integrity,
// conflicts, expired leases at now and dependency problems. It never
// changes anything. It reads without the lock: what it finds wrong, which
// may be an append or a compaction in progress, it reads again once the
// lock was free (store.ReadSettled).
func Diagnose(dir string, now time.Time) (*Report, error) {
	return store.ReadSettled(dir, func() (*Report, string, error) {
		r, _, err := diagnose(dir, now)
		if err != nil {
			return r, err.Error(), err
		}
		return r, r.finding(), nil
	})
}

// finding is what r finds that a reader without the lock can also see of
// an append or a compaction in progress (a torn tail, a last line whose
// newline has not landed, damage, files of two generations), as a string
// two reads can compare; "" when none.
func (r *Report) finding() string {
	if !r.Corrupt && r.TornTail == nil && r.LostNewline == 0 && len(r.Stale) == 0 && r.LostEvents == nil && r.Leftover == "" {
		return ""
	}
	return fmt.Sprintf("%v %+v %d %v %v %+v %q", r.Corrupt, r.TornTail, r.LostNewline, r.Damage, r.Stale, r.LostEvents, r.Leftover)
}

func diagnose(dir string, now time.Time) (*Report, []rawLine, error) {
	path := filepath.Join(dir, store.LedgerFile)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, wire.Errorf(wire.ErrNotInitialized, "%s has no %s", dir, store.LedgerFile)
		}
		return nil, nil, err
	}
	rep := &Report{Dir: dir, Bytes: int64(len(data)), Damage: []Damage{}, Stale: []Damage{}, Conflicts: []wire.Conflict{}, SelfApprovals: []wire.Conflict{}, CreatedTwice: []CreatedTwice{},
		ExpiredLeases: []ExpiredLease{}, DependencyProblems: []string{}, Repaired: []string{}}
	lines, err := readLedgerLines(rep, path, data)
	if err != nil {
		return nil, nil, err
	}
	s, pos, err := diagnoseSnapshot(rep, dir)
	if err != nil {
		return nil, nil, err
	}
	defer pos.Close()
	if err := diagnoseArchives(rep, dir); err != nil {
		return nil, nil, err
	}
	evs, seen := judgeLedgerLines(rep, lines, pos)
	markFromGit(rep, dir, data)
	slices.SortStableFunc(evs, wire.ByAtID)
	for _, e := range evs {
		_ = s.Apply(e) // conflicts are recorded in the state
	}
	s = separateStale(rep, dir, lines, s)
	rep.SetAside = setAsideReport(dir, seen)
	rep.Quarantined, _ = store.ReadQuarantine(dir)
	rep.TrackedLocal, _ = store.TrackedLocal(dir)
	rep.Warnings = append(rep.Warnings, trackedLocalWarnings(rep.TrackedLocal)...)
	if rep.LocalLinks = store.LocalLinks(dir); len(rep.LocalLinks) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("symbolic links below the backlog's cache: %s; bl writes none of its local files through them (they stay unwritten); "+
			"bl doctor --repair removes them (git rm --cached first when git tracks them)", strings.Join(rep.LocalLinks, ", ")))
	}
	summarizeState(rep, s, lines, now)
	return rep, lines, nil
}

// readLedgerLines reads every line of the ledger through the one reader
// and its rule, noting line ends and a torn tail in rep; unlike the other
// callers, doctor goes on past damage to list all of it.
func readLedgerLines(rep *Report, path string, data []byte) ([]rawLine, error) {
	lr := wire.NewLineReader(path, bytes.NewReader(data), wire.LineStart{}, min(len(data), wire.FileBufSize))
	var lines []rawLine
	for {
		var e *wire.Event
		l, torn, err := lr.NextJudged(func(b []byte) (err error) {
			e, err = wire.DecodeLine(b)
			return err
		})
		if err == io.EOF {
			break
		}
		raw := rawLine{n: l.N, offset: l.Off, bytes: data[l.Off : l.Off+l.Size], event: e}
		if torn != nil {
			rep.TornTail = torn
			break
		}
		var ce *wire.CorruptError
		if errors.As(err, &ce) {
			raw.event, raw.err = nil, ce.Err
			if body := bytes.TrimRight(raw.bytes, "\r\n"); wire.ConflictMarker(body) {
				raw.err = wire.MarkerError(body)
			}
		} else if err != nil {
			return nil, err
		}
		if raw.event != nil && bytes.HasSuffix(raw.bytes, []byte("\r\n")) {
			rep.CRLFLines++
		}
		if raw.event != nil && !l.Ended {
			rep.LostNewline = l.N
		}
		lines = append(lines, raw)
	}
	rep.Lines = len(lines)
	return lines, nil
}

// diagnoseSnapshot loads the snapshot and finds where the ledger's own
// events start, reporting a damaged, stale or unproducible snapshot and an
// archive segment a compaction left behind. A damaged snapshot gives an
// empty state and store.Position; the caller closes pos.
func diagnoseSnapshot(rep *Report, dir string) (*fold.State, store.Position, error) {
	s, hdr, err := store.LoadSnapshot(dir)
	snapDamaged := false
	if errors.Is(err, store.ErrStale) { // a union of two snapshots
		rep.Damage = append(rep.Damage, Damage{File: store.SnapshotFile, Line: 1, Kind: "stale", Repairable: true,
			Reason: strings.TrimPrefix(err.Error(), store.ErrStale.Error()+": ")})
		s, snapDamaged, err = fold.NewState(), true, nil
	}
	if err != nil {
		var ce *wire.CorruptError
		if !errors.As(err, &ce) {
			return nil, store.Position{}, err
		}
		kind := "snapshot"
		if errors.Is(err, wire.ErrVersion) {
			kind = "version"
		}
		rep.Damage = append(rep.Damage, Damage{File: store.SnapshotFile, Line: ce.Line, Offset: ce.Offset, Kind: kind, Reason: ce.Err.Error()})
		s, snapDamaged = fold.NewState(), true
	}
	var pos store.Position
	if err = nil; !snapDamaged {
		pos, err = store.SnapshotPosition(dir, s, hdr)
	}
	if errors.Is(err, store.ErrStale) {
		rep.Damage = append(rep.Damage, Damage{File: store.SnapshotFile, Kind: "stale", Repairable: true,
			Reason: "archive/ holds other segments than the snapshot folded (a git merge?); repair rebuilds the snapshot"})
	} else if err != nil {
		pos.Close()
		return nil, store.Position{}, err
	} else if names, nerr := store.ArchiveNames(dir); nerr == nil && !snapDamaged && !store.NamesMatch(names, hdr) {
		rep.Leftover = store.LeftoverSegment(dir, pos.File(), names, hdr, pos.Base())
	}
	checkSnapshotFold(dir, rep, hdr) // a snapshot no history produces (doctor_refold.go)
	return s, pos, nil
}

// diagnoseArchives reads the archive segments (bl log reads them, a
// rebuild folds them again) and reports damage in them with its file,
// line and offset.
func diagnoseArchives(rep *Report, dir string) error {
	segs, err := store.Segments(dir)
	if err != nil {
		return err
	}
	_, err = store.ArchivedEvents(segs[:len(segs)-1], wire.Cursor{}, func(*wire.Event) error { return nil })
	if err == nil {
		return nil
	}
	var ce *wire.CorruptError
	if !errors.As(err, &ce) {
		return err
	}
	name := ce.Path
	if rel, err := filepath.Rel(dir, ce.Path); err == nil {
		name = filepath.ToSlash(rel)
	}
	d := Damage{File: name, Line: ce.Line, Offset: ce.Offset, Kind: "archive", Reason: ce.Err.Error()}
	if errors.Is(err, wire.ErrConflictMarkers) {
		// A merge made before the union rule: repair keeps the
		// events and drops the markers, as in the ledger.
		d.Kind, d.Repairable = "conflict-markers", true
	}
	if errors.Is(err, wire.ErrStampRange) {
		d.Kind, d.Repairable = "stamp", true
	}
	rep.Damage = append(rep.Damage, d)
	return nil
}

// judgeLedgerLines sorts the ledger's lines after pos into damage (by
// kind), repeats and restamps of one event, events a stale snapshot
// already passed, and the events to fold, which it returns with the line
// index of each event id.
func judgeLedgerLines(rep *Report, lines []rawLine, pos store.Position) (evs []*wire.Event, seen map[string]int) {
	seen = map[string]int{} // event id -> index in lines
	prev := pos.Snap()      // the newest event so far, for the order count
	stale := false
	var markers []rawLine
	for i, l := range lines {
		if l.offset < pos.Base() {
			continue // folded into the snapshot by a compaction cut short
		}
		if l.err != nil {
			if errors.Is(l.err, wire.ErrConflictMarkers) {
				markers = append(markers, l)
			} else {
				rep.Damage = append(rep.Damage, lineDamage(l))
			}
			continue
		}
		if j, dup := seen[l.event.ID]; dup {
			if bytes.Equal(bytes.TrimRight(lines[j].bytes, "\r\n"), bytes.TrimRight(l.bytes, "\r\n")) {
				rep.Repeated++ // a git union merge: read once
				continue
			}
			if wire.SameButStamp(lines[j].event, l.event) {
				rep.Restamped++ // one event, stamped again by bl sync: the later stamp counts
				continue
			}
			rep.Damage = append(rep.Damage, Damage{File: store.LedgerFile, Line: l.n, Offset: l.offset, Kind: "duplicate",
				Reason: fmt.Sprintf("event id %s is also used by the different line %d", l.event.ID, lines[j].n)})
			continue
		}
		seen[l.event.ID] = i
		if pos.Snap() != nil && !pos.Snap().Before(l.event) {
			if !stale {
				rep.Damage = append(rep.Damage, Damage{File: store.LedgerFile, Line: l.n, Offset: l.offset, Kind: "stale", Repairable: true,
					Reason: fmt.Sprintf("event %s at %s is not after the snapshot's newest event %s (a git merge brought it in)", l.event.ID, l.event.At.Format(wire.TimeLayout), pos.Snap().ID)})
			}
			stale = true
			continue
		}
		if prev != nil && !prev.Before(l.event) {
			rep.Unsorted++ // a git union merge: read in (at, id) order
		} else {
			prev = l.event
		}
		evs = append(evs, l.event)
	}
	if len(markers) > 0 {
		m := markers[0]
		rep.Damage = append(rep.Damage, Damage{File: store.LedgerFile, Line: m.n, Offset: m.offset, Kind: "conflict-markers", Repairable: true,
			Reason: fmt.Sprintf("%d line(s) of git conflict markers (<<<<<<<, =======, >>>>>>>), the first %.24q, from a git merge made without the union rule of .backlog/.gitattributes; the lines between them are events",
				len(markers), bytes.TrimRight(m.bytes, "\r\n"))})
	}
	return evs, seen
}

// lineDamage is the damage a ledger line that holds no event is, by why.
func lineDamage(l rawLine) Damage {
	d := Damage{File: store.LedgerFile, Line: l.n, Offset: l.offset, Kind: "checksum", Reason: l.err.Error()}
	switch {
	case errors.Is(l.err, wire.ErrVersion):
		d.Kind = "version"
	case errors.Is(l.err, wire.ErrBlank):
		d.Kind, d.Repairable, d.Reason = "blank", true, "blank line (holds no event; repair drops it)"
	case errors.Is(l.err, wire.ErrStampRange):
		d.Kind, d.Repairable = "stamp", true
	case !errors.Is(l.err, wire.ErrChecksum):
		d.Kind = "framing"
	}
	return d
}

// separateStale moves stale findings from rep.Damage to rep.Stale: a stale
// snapshot (a compaction cut short, a git merge, a revert) blocks nothing,
// the next open rebuilds it; everything else is damage. With only stale
// findings, it returns the state as the next open will see it, and the
// events that state lost, if any.
func separateStale(rep *Report, dir string, lines []rawLine, s *fold.State) *fold.State {
	for _, d := range rep.Damage {
		if d.Kind == "stale" {
			rep.Stale = append(rep.Stale, d)
		}
	}
	rep.Damage = slices.DeleteFunc(rep.Damage, func(d Damage) bool { return d.Kind == "stale" })
	rep.Corrupt = len(rep.Damage) > 0
	if rep.Corrupt || len(rep.Stale) == 0 {
		return s
	}
	t, err := store.ReadTree(dir)
	if err != nil {
		return s
	}
	norm, lost, err := store.NormalTree(t, ledgerEvents(lines))
	if err != nil {
		return s
	}
	if ns, err := norm.FoldNormal(); err == nil {
		s = ns
	}
	if lost != nil {
		rep.LostEvents = lost
		rep.Stale = append(rep.Stale, Damage{File: store.SnapshotFile, Line: 1, Kind: "stale", Repairable: true, Reason: lost.String()})
	}
	return s
}

// summarizeState reports what the folded state holds: cards, conflicts,
// expired leases, dependency problems and events stamped ahead of now.
func summarizeState(rep *Report, s *fold.State, lines []rawLine, now time.Time) {
	rep.Cards = s.Len()
	rep.Conflicts = append(rep.Conflicts, s.Conflicts()...)
	var evs []*wire.Event // the ledger's, in fold order, read for a card created twice
	for _, c := range s.Conflicts() {
		if (c.Op == wire.OpApprove || c.Op == wire.OpReject) && strings.HasPrefix(c.Reason, fold.SelfReviewRefused) {
			rep.SelfApprovals = append(rep.SelfApprovals, c)
		}
		if fold.CreatedTwice(c) {
			if evs == nil {
				evs, _ = wire.SettleEvents(ledgerEvents(lines))
			}
			if ct, ok := createdTwice(c, evs, s.Find(c.Card)); ok {
				rep.CreatedTwice = append(rep.CreatedTwice, ct)
			}
		}
	}
	for _, id := range s.Expired(now) {
		c := s.Find(id)
		rep.ExpiredLeases = append(rep.ExpiredLeases, ExpiredLease{Card: id, Owner: c.ClaimOwner, Epoch: c.ClaimEpoch, ExpiredAt: *c.LeaseExpiresAt})
	}
	rep.DependencyProblems = append(rep.DependencyProblems, s.DependencyProblems()...)
	rep.FutureEvents, rep.StampsAheadSeconds = store.FutureEvents(ledgerEvents(lines), s.Last(), now)
}

// ledgerEvents is the events of the lines that hold one, in file order.
func ledgerEvents(lines []rawLine) []*wire.Event {
	evs := make([]*wire.Event, 0, len(lines))
	for _, l := range lines {
		if l.event != nil {
			evs = append(evs, l.event)
		}
	}
	return evs
}

// setAsideReport describes ledger.jsonl.broken, counting the valid events
// in it that neither the ledger (inLedger) nor the archives hold; nil when
// there is no such file.
func setAsideReport(dir string, inLedger map[string]int) *SetAside {
	data, err := os.ReadFile(filepath.Join(dir, store.BrokenFile))
	if err != nil {
		return nil
	}
	sa := &SetAside{Bytes: int64(len(data))}
	var found []*wire.Event
	for _, piece := range bytes.Split(data, []byte{'\n'}) {
		if e, err := wire.DecodeLine(piece); err == nil {
			if _, ok := inLedger[e.ID]; !ok {
				found = append(found, e)
			}
		}
	}
	if len(found) == 0 {
		return sa
	}
	archived := map[string]bool{}
	if segs, err := store.Segments(dir); err == nil {
		_, _ = store.ArchivedEvents(segs[:len(segs)-1], wire.Cursor{}, func(e *wire.Event) error {
			archived[e.ID] = true
			return nil
		})
	}
	for _, e := range found {
		if !archived[e.ID] {
			sa.Events++
		}
	}
	return sa
}

// markFromGit marks the ledger damage in rep that git wrote (see above)
// as repairable: bl doctor --repair, or the next command, quarantines it.
func markFromGit(rep *Report, dir string, data []byte) {
	if !slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.File == store.LedgerFile && !d.Repairable }) {
		return
	}
	root, err := gitdir.Root(dir)
	if err != nil {
		return
	}
	rel, err := filepath.Rel(root, filepath.Join(dir, store.LedgerFile))
	if err != nil {
		return
	}
	n, ok := gitdir.StagedPrefix(root, filepath.ToSlash(rel), data)
	if !ok {
		return
	}
	_, bad := store.QuarantineLines(data[:n], store.FromGit, "", store.LedgerFile)
	for i, d := range rep.Damage {
		if d.File == store.LedgerFile && slices.ContainsFunc(bad, func(q store.Quarantined) bool { return q.Line == d.Line }) {
			rep.Damage[i].Repairable = true
			rep.Damage[i].Reason += " (git wrote this line: the next bl command quarantines it)"
		}
	}
}

// trackedLocalWarnings say which local files git tracks and what to do.
// The lock has its own warning (bl doctor's CLI).
func trackedLocalWarnings(names []string) (out []string) {
	var settings, rest []string
	for _, n := range names {
		switch n {
		case store.LockFile:
		case store.HooksFile, store.ArbiterFile:
			settings = append(settings, n)
		default:
			rest = append(rest, n)
		}
	}
	if len(rest) > 0 {
		out = append(out, fmt.Sprintf("git tracks local files: %s (local to each clone by design: a teammate force-added them, and git replaced this clone's own; bl does not believe them); "+
			"bl doctor --repair untracks them (git rm --cached) and deletes the cache copies, which bl rebuilds; commit that to take them off the branch", strings.Join(rest, ", ")))
	}
	if len(settings) > 0 {
		out = append(out, fmt.Sprintf("git tracks %s, this clone's own settings by design: refused (tracked hooks never run; claims through a tracked arbiter.json exit 2); "+
			"review them, delete them or write your own, then git rm --cached them (bl doctor --repair leaves them: untracked, bl would believe them)", strings.Join(settings, ", ")))
	}
	return out
}
