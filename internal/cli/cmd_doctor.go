package cli

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// DoctorCmd checks the backlog's integrity.
type DoctorCmd struct {
	Repair bool `help:"Fix what can be fixed without losing an event (torn tail, duplicated or misordered lines)."`
}

func (DoctorCmd) Help() string {
	return `Reads the whole ledger and reports: damaged lines (with line number and byte
offset), a torn final line left by a crash, conflicts the fold recorded
(for example the losing claim of two merged clones), expired leases not
yet reclaimed, cards stuck behind blocked or missing dependencies, and
events written by a clock more than 1s ahead of this machine's (leases
are timed by each writer's own clock, so they do not stretch later ones).

--repair takes the lock and sets a torn tail aside into
ledger.jsonl.broken, drops exact duplicate lines and restores (at, id)
order. It never deletes an acknowledged event: a line whose checksum fails
mid-file must be restored from git history, and doctor says so.

Exits 6 while the ledger has damage that blocks reads or writes.

Examples:

    bl doctor
    bl doctor --repair
    bl doctor --json | jq .conflicts` + exitCodesHelp
}

func (c *DoctorCmd) Run(a *App) error {
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
	if rep != nil {
		if perr := a.emit(rep, func(w io.Writer) { a.printReport(w, rep) }); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if rep.Corrupt {
		i := slices.IndexFunc(rep.Damage, func(d ledger.Damage) bool { return d.Kind != "stale" })
		d := rep.Damage[i]
		return ledger.Errorf(ledger.ErrCorrupt, "corrupt backlog: %s line %d (byte offset %d): %s", ledger.LedgerFile, d.Line, d.Offset, d.Reason)
	}
	return nil
}

func (a *App) printReport(w io.Writer, r *ledger.Report) {
	fmt.Fprintf(w, "backlog    %s\n", r.Dir)
	fmt.Fprintf(w, "ledger     %d lines, %d bytes, %d cards\n", r.Lines, r.Bytes, r.Cards)
	for _, s := range r.Repaired {
		fmt.Fprintf(w, "repaired   %s\n", s)
	}
	if !r.Corrupt {
		fmt.Fprintln(w, "integrity  ok")
	}
	for _, d := range r.Damage {
		fix := "restore from git"
		switch {
		case d.Kind == "stale":
			fmt.Fprintf(w, "stale      %s (the next write, or bl doctor --repair, rebuilds it)\n", d.Reason)
			continue
		case d.Repairable:
			fix = "bl doctor --repair fixes it"
		}
		fmt.Fprintf(w, "DAMAGE     line %d (byte offset %d), %s: %s (%s)\n", d.Line, d.Offset, d.Kind, d.Reason, fix)
	}
	if t := r.TornTail; t != nil {
		fmt.Fprintf(w, "torn tail  %d bytes at line %d (%s): never acknowledged; the next write or bl doctor --repair sets it aside\n", t.Bytes, t.Line, t.Reason)
	}
	section := func(title string, n int) {
		if n > 0 {
			fmt.Fprintf(w, "%s (%d)\n", title, n)
		}
	}
	section("conflicts recorded by the fold", len(r.Conflicts))
	for _, c := range r.Conflicts {
		fmt.Fprintf(w, "  %s %s of %s by %s: %s\n", c.At, c.Op, c.Card, c.Actor, c.Reason)
	}
	section("expired leases (bl reclaim returns them)", len(r.ExpiredLeases))
	for _, l := range r.ExpiredLeases {
		fmt.Fprintf(w, "  %s held by %s epoch %d, expired %s\n", l.Card, l.Owner, l.Epoch, stamp(&l.ExpiredAt))
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

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
