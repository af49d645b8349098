package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// DoctorCmd checks the backlog's integrity.
type DoctorCmd struct {
	Repair bool   `help:"Fix what can be fixed without losing an event (torn tail, lost final newline, blank lines, git conflict markers, stale snapshot)."`
	Remote string `placeholder:"NAME" help:"Check this git remote's lease refs of the backlog instead of the local files: list those holding what bl sets aside."`
	Retire string `placeholder:"CARD" help:"With --remote: replace CARD's bad lease ref by a tip holding only what bl folds (compare-and-swap with the tip just checked)."`
}

func (DoctorCmd) Help() string {
	return `Reads the ledger, the snapshot and the archive segments and reports, one
line each: damaged lines (file, line number and byte offset), a torn tail
left by a crash, a last event that lost its newline, lines with CRLF line
ends, what writers set aside into ledger.jsonl.broken, conflicts the fold
recorded (for example the losing claim of two merged clones), cards two
clones created with one id that a plain git merge brought together (the
second create refused; --repair cannot tell whose later events are whose,
so it names who wrote them and leaves them), expired
leases not yet reclaimed, cards stuck behind blocked or missing
dependencies, and events written by a clock more than 1s ahead of this
machine's (leases are timed by each writer's own clock, so such an event
does not stretch later leases).

A line is an event when it is complete and its checksum holds, whatever its
line end ("\n", "\r\n", or a last line that lost its newline). A torn tail
is what cannot be a finished append: an unterminated fragment that is not a
valid line, or NUL bytes. A complete line that fails its checksum is damage,
even the last one.

Lines a git union merge leaves out of (at, id) order or twice are not
damage: bl reads them in order, each event once, and doctor only counts
them. A union of two snapshots is a stale snapshot, rebuilt from the
archive segments. Lines of git conflict markers (<<<<<<<, =======,
>>>>>>>), from a merge made before the backlog had its .gitattributes, are
damage in the ledger or an archive segment that --repair fixes: the lines
between them are events (in snapshot.json they only make it stale).

--repair takes the lock and sets a torn tail aside into
ledger.jsonl.broken, restores a lost final newline, drops blank lines and
conflict marker lines (rewriting the ledger with every event once, in
(at, id) order; repeated lines are copied to ledger.jsonl.broken) and
rebuilds a stale snapshot. It never deletes an acknowledged event: a line whose checksum
fails, or a damaged snapshot, must be restored from git history, and doctor
says where (git log -p -- PATH).

It also reports events this clone saw that the files no longer hold: a
git revert or reset of a backlog commit (.backlog/cache/seen.json is the
clone's local record). They come back at the next merge of a branch that
has them, since the ledger is a grow-only set of events; undo with bl
commands (reopen, unblock, update, release) instead. This is a warning,
not damage; --repair accepts the files as they are.

Files local to each clone by design (cache/*, .staging/*, lock,
*.broken, hooks.json, arbiter.json) that git tracks came with a
teammate's push (git add -f bypasses .gitignore, and git replaces an
ignored file when it checks out a tracked one): bl does not believe them,
and doctor names them. --repair untracks them (git rm --cached; commit it)
and deletes the cache copies, which bl rebuilds; it leaves hooks.json and
arbiter.json tracked and refused for you to review. Symbolic links below
cache/ are listed too (bl writes no cache through them); --repair removes
them. A config.json that
does not read (every other command refuses the backlog then) is a
warning too, naming what to fix.

A snapshot that disagrees with the events the files hold is stale, never
damage: a union of two snapshots after a git merge, archive segments the
snapshot did not fold, or a snapshot that counts events a git revert of a
compaction took out. Every command reads the events the files hold, and
the next write (or --repair) rebuilds the snapshot from them. --json
lists such state under "stale" (and "lost_events" for a revert), apart
from "damage", so a CI check for "damage": [] passes after a merge.

Doctor reads without the lock, beside running writers. What it finds wrong
(a torn tail, stale files, events missing from what this clone saw) may be
an append or a compaction in progress, so it reads again once the lock
was free for a moment (waiting up to 10s for it), and reports a finding
the second read repeats.

Exits 6 while the backlog has damage that blocks reads or writes.

--remote NAME checks the remote's lease refs of this backlog instead
(refs/bl/leases/<namespace>/<card>, docs/SYNC.md): a lease ref carries
only the lease events of its own card, in a commit of at most 256 KiB and
32 lines; anything else is set aside by every clone, which warns once
naming the ref and the commit. doctor lists each such ref, line and
reason. --retire CARD replaces CARD's bad lease ref by a tip, without
history, that holds only the lines bl folds: a compare-and-swap with the
tip just checked (exit 4 if a lease write landed meanwhile; run it
again), never a delete.

Examples:

    bl doctor
    bl doctor --repair
    bl doctor --json | jq .conflicts
    bl doctor --remote origin
    bl doctor --remote origin --retire C1` + exitCodesHelp
}

func (c *DoctorCmd) Run(a *App) error {
	if c.Remote != "" {
		return c.runRemote(a)
	}
	if c.Retire != "" {
		return usagef("--retire names a card of --remote NAME's lease refs: bl doctor --remote origin --retire " + text(c.Retire))
	}
	dir, err := findBacklog(a.Dir)
	if err != nil {
		return err
	}
	var rep *ledger.Report
	if c.Repair {
		rep, err = ledger.Repair(a.ctx, dir, a.LockTimeout, a.now())
	} else {
		rep, err = ledger.Diagnose(dir, a.now())
	}
	if rep != nil && err == nil && !rep.Corrupt {
		a.checkSeen(dir, rep, c.Repair)
	}
	if rep != nil {
		checkLockUntracked(a.ctx, dir, rep)
		checkConfig(dir, rep)
	}
	if rep != nil {
		if perr := a.emit(rep, func(w io.Writer) { a.printReport(w, rep) }); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if rep.Corrupt {
		d := rep.Damage[0]
		return ledger.Errorf(ledger.ErrCorrupt, "corrupt backlog: %s line %d (byte offset %d): %s", d.File, d.Line, d.Offset, d.Reason)
	}
	return nil
}

// checkSeen adds to the report the events this clone saw that the files
// no longer hold (a git revert or reset); --repair accepts the files as
// they are.
func (a *App) checkSeen(dir string, rep *ledger.Report, accept bool) {
	m, err := ledger.CheckSeen(dir, accept)
	if err != nil {
		fmt.Fprintf(a.Stderr, "bl: warning: compare with the history this clone saw: %v\n", err)
		return
	}
	rep.Missing = m
	if accept && m != nil {
		rep.Repaired = append(rep.Repaired, fmt.Sprintf("accepted that the files hold %d event(s) fewer than this clone saw (%s no longer warns)", m.Missing, ledger.SeenFile))
		rep.Missing = nil // the report is of the backlog after repair
	}
}

// missingText explains a revert or reset of backlog commits and how to
// undo instead.
func missingText(m *ledger.MissingEvents) string {
	what := fmt.Sprintf("the files hold fewer events than this clone saw (%d missing, newest cursor %s)", m.Missing, m.Newest)
	if m.Now >= m.Seen {
		what = fmt.Sprintf("the newest event this clone saw is gone from the files (cursor %s)", m.Newest)
	}
	return what + ": a git revert or reset (or a checkout of a branch without them) took them out; they come back at the next merge of a branch that has them; " +
		"undo with bl commands instead (reopen, unblock, update, release); bl doctor --repair accepts the files as they are"
}

func (a *App) printReport(w io.Writer, r *ledger.Report) {
	fmt.Fprintf(w, "backlog    %s\n", r.Dir)
	fmt.Fprintf(w, "ledger     %d lines, %d bytes, %d cards\n", r.Lines, r.Bytes, r.Cards)
	for _, s := range r.Repaired {
		fmt.Fprintf(w, "repaired   %s\n", text(s))
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning    %s\n", text(s))
	}
	if !r.Corrupt {
		fmt.Fprintln(w, "integrity  ok")
	}
	if m := r.Missing; m != nil {
		fmt.Fprintf(w, "missing    %s\n", missingText(m))
	}
	if r.CRLFLines > 0 {
		fmt.Fprintf(w, "line ends  %d line(s) end in \\r\\n (a CRLF checkout, core.autocrlf): they read as the same events\n", r.CRLFLines)
	}
	if r.Unsorted > 0 || r.Repeated > 0 {
		fmt.Fprintf(w, "merged     %d line(s) out of (at, id) order and %d repeated, as a git union merge leaves them: read in order, each event once (not damage)\n", r.Unsorted, r.Repeated)
	}
	if r.Restamped > 0 {
		fmt.Fprintf(w, "restamped  %d line(s) repeat an event with an earlier or later stamp (bl sync re-stamped it; a git merge brought the other copy): the later stamp counts (not damage)\n", r.Restamped)
	}
	if r.LostNewline > 0 {
		fmt.Fprintf(w, "newline    line %d, the last event, lost its newline: it still counts; the next write or bl doctor --repair restores it\n", r.LostNewline)
	}
	for _, d := range r.Stale {
		fmt.Fprintf(w, "stale      %s (not damage: the next write, or bl doctor --repair, rebuilds it)\n", d.Reason)
	}
	for _, d := range r.Damage {
		fix := "restore it from git: git log -p -- " + ledger.GitPath(r.Dir, d.File)
		if d.Repairable {
			fix = "bl doctor --repair fixes it"
		}
		fmt.Fprintf(w, "DAMAGE     %s line %d (byte offset %d), %s: %s (%s)\n", d.File, d.Line, d.Offset, d.Kind, d.Reason, fix)
	}
	if t := r.TornTail; t != nil {
		fmt.Fprintf(w, "torn tail  %d bytes at line %d (%s): never acknowledged; the next write or bl doctor --repair sets it aside\n", t.Bytes, t.Line, t.Reason)
	}
	if r.Leftover != "" {
		fmt.Fprintf(w, "leftover   %s was written by a compaction that did not finish (a full disk, a kill): every event in it is still in the ledger; the next compaction removes it\n", r.Leftover)
	}
	if sa := r.SetAside; sa != nil {
		fmt.Fprintf(w, "set aside  %s holds %d bytes set aside: torn tails (never acknowledged) and damaged lines quarantined (never folded); safe to delete once reviewed\n", ledger.BrokenFile, sa.Bytes)
		if sa.Events > 0 {
			fmt.Fprintf(w, "set aside  %d line(s) in %s are valid events this backlog lacks (an older bl set them aside): review them before deleting it\n", sa.Events, ledger.BrokenFile)
		}
	}
	printSections(w, r)
}

// printSections lists the report's findings that come one to a card or an
// event, each under a heading with its count.
func printSections(w io.Writer, r *ledger.Report) {
	section := func(title string, n int) {
		if n > 0 {
			fmt.Fprintf(w, "%s (%d)\n", title, n)
		}
	}
	section("lines quarantined as they arrived from another clone (bl sync --push leaves them out of the branch)", len(r.Quarantined))
	for _, q := range r.Quarantined {
		fmt.Fprintf(w, "  %s line %d from %s at %s: %s\n", q.File, q.Line, text(q.From), q.Commit, text(q.Reason))
	}
	section("conflicts recorded by the fold", len(r.Conflicts))
	for _, c := range r.Conflicts {
		fmt.Fprintf(w, "  %s %s\n", text(c.Card), conflictText(c))
	}
	section("self-approvals refused by the review gate (an older bl let them through: the card is in review again; another reviewer decides it)", len(r.SelfApprovals))
	for _, c := range r.SelfApprovals {
		who := c.Actor
		if c.Owner != "" {
			who = c.Owner + " (actor " + c.Actor + ")"
		}
		fmt.Fprintf(w, "  %s %s by %s at %s\n", text(c.Card), c.Op, nameText(who), c.At)
	}
	section("cards created on two clones (a git merge brought both creates here: the second was refused, and every later event on the id folded onto the first card, whichever card its writer meant; bl doctor --repair cannot tell them apart: bl log --id CARD lists them with their actors)", len(r.CreatedTwice))
	for _, c := range r.CreatedTwice {
		fmt.Fprintf(w, "  %s: the create by %s (event %s at %s) was refused; %s is the card created first", text(c.Card), nameText(c.Refused.Actor), c.Refused.Event, c.Refused.At, text(c.Card))
		if k := c.Kept; k != nil {
			fmt.Fprintf(w, " by %s (event %s)", nameText(k.Actor), k.Event)
		}
		if len(c.Later) > 0 {
			var by []string
			for _, actor := range slices.Sorted(maps.Keys(c.Later)) {
				by = append(by, fmt.Sprintf("%d by %s", c.Later[actor], nameText(actor)))
			}
			fmt.Fprintf(w, "; later events naming it: %s", strings.Join(by, ", "))
		}
		fmt.Fprintln(w)
	}
	section("expired leases (bl reclaim returns them)", len(r.ExpiredLeases))
	for _, l := range r.ExpiredLeases {
		fmt.Fprintf(w, "  %s held by %s epoch %d, expired %s\n", l.Card, nameText(l.Owner), l.Epoch, stamp(&l.ExpiredAt))
	}
	section("dependency problems", len(r.DependencyProblems))
	for _, p := range r.DependencyProblems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	section("events from a clock ahead of this machine's", len(r.FutureEvents))
	for _, f := range r.FutureEvents {
		fmt.Fprintf(w, "  %q %s of %q by %q: stamped %s, %s ahead\n", f.Event, f.Op, f.Card, f.Actor, stamp(&f.At), ledger.FormatSkew(seconds(f.AheadSeconds)))
	}
	if r.StampsAheadSeconds > 0 {
		fmt.Fprintf(w, "clock      the newest event is stamped %s ahead of this machine's clock; events stamped after a fast clock's carry their writers' clocks, which time their leases\n", ledger.FormatSkew(seconds(r.StampsAheadSeconds)))
	}
}

// seconds converts a report's seconds back to a duration, saturating so a
// distance too large for a Duration never prints as a negative one.
func seconds(s float64) time.Duration {
	if d := s * float64(time.Second); d < float64(math.MaxInt64) {
		return time.Duration(d)
	}
	return time.Duration(math.MaxInt64)
}

// checkConfig warns when config.json does not read: every other command
// that opens the backlog refuses it until it is fixed.
func checkConfig(dir string, rep *ledger.Report) {
	if _, err := ledger.ReadConfig(dir); err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%v: every command that opens the backlog refuses it until it is fixed", err))
	}
}

// checkLockUntracked warns when git tracks the lock file: a pull or a
// checkout may then replace it while bl runs. The lock holds through that
// (package lock), but the file belongs in .gitignore.
func checkLockUntracked(ctx context.Context, dir string, rep *ledger.Report) {
	is, err := gitdir.Tracked(ctx, dir, ledger.LockFile)
	if err == nil && is {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s is tracked by git: untrack it (git rm --cached %s) and keep it ignored; a pull or checkout may replace it while bl runs",
			ledger.LockFile, filepath.Join(dir, ledger.LockFile)))
	}
}

// runRemote is bl doctor --remote: the remote's lease refs of the backlog.
func (c *DoctorCmd) runRemote(a *App) error {
	if c.Repair {
		return usagef("--repair and --remote exclude each other: --remote NAME --retire CARD fixes a bad lease ref")
	}
	g, err := a.needGit("bl doctor --remote")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	rep, err := g.LeaseDoctor(a.ctx, b, a.remoteWrite(c.Remote, false), c.Retire)
	if err != nil {
		return err
	}
	return a.emit(rep, func(w io.Writer) {
		fmt.Fprintf(w, "remote     %s, %d lease ref(s) under %s\n", text(rep.Remote), rep.Refs, rep.Prefix)
		if len(rep.Bad) == 0 {
			fmt.Fprintln(w, "lease refs ok")
		}
		for _, r := range rep.Bad {
			where := "commit"
			if r.Line > 0 {
				where = fmt.Sprintf("line %d", r.Line)
			}
			fmt.Fprintf(w, "BAD        %s at %s, %s: %s (set aside by every clone; bl doctor --remote %s --retire %s)\n", r.Ref, r.Commit, where, text(r.Reason), text(rep.Remote), r.Card)
		}
		if rep.Retired != "" {
			fmt.Fprintf(w, "retired    %s: its tip is now %s, holding only what bl folds\n", rep.Retired, rep.Tip)
		}
	})
}
