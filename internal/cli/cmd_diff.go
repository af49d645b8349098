package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// DiffCmd shows what changed in the backlog between two commits.
type DiffCmd struct {
	Revs []string `arg:"" name:"rev" placeholder:"REV" help:"A commit, branch or tag; two to compare two commits, one to compare it with the working backlog."`
}

func init() {
	register(command{name: "diff", rank: 290, help: "What changed in the backlog between two commits, card by card.", new: func() any { return &DiffCmd{} }})
}

func (DiffCmd) Help() string {
	return `What changed in the backlog between two git commits, card by card, for a
reviewer: cards created and removed, fields changed old → new (status
included), and what happened to each card in the events only one side
holds: claims, releases, completions and blocks with their owners, and the
claims the fold refused (the loser of two clones' race). With one REV, the
other side is the working backlog (what bl sync would commit). A REV is
anything git rev-parse takes: HEAD~1, main, a tag, a hash. It is resolved
in the repository that holds the shared backlog: from a linked worktree,
HEAD is the main worktree's HEAD, as for bl sync.

Events the old commit holds and the new one does not are counted and
marked "removed": a git revert or reset between the two. The ledger is a
grow-only set, so they come back at the next merge of a branch that has
them; undo with bl commands instead.

Examples:

    bl diff HEAD~1
    bl diff main feature
    bl diff v1.2 HEAD --json | jq '.cards[] | select(.change == "created") | .id'` + exitCodesHelp
}

// diffSide names one side of a diff: a revision and its commit, or the
// working backlog (both empty).
type diffSide struct {
	Rev    string `json:"rev"`
	Commit string `json:"commit"`
}

func (s diffSide) String() string {
	if s.Rev == "" {
		return "the working backlog"
	}
	return fmt.Sprintf("%s (%.12s)", s.Rev, s.Commit)
}

func (c *DiffCmd) Run(a *App) error {
	if len(c.Revs) > 2 {
		return usagef("bl diff takes one or two revisions: bl diff REV (against the working backlog) or bl diff OLD NEW")
	}
	git, err := a.needGit("bl diff")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	var trees [2]ledger.Tree
	var sides [2]diffSide
	for i, rev := range c.Revs {
		if rev == "" {
			return usagef("bl diff: a revision is empty")
		}
		if trees[i], sides[i].Commit, err = git.BacklogAt(b.Dir(), rev); err != nil {
			return err
		}
		sides[i].Rev = rev
	}
	if len(c.Revs) == 1 {
		if trees[1], err = b.Tree(a.ctx); err != nil {
			return err
		}
	}
	d, err := ledger.DiffTrees(trees[0], trees[1])
	if err != nil {
		return err
	}
	out := struct {
		Old diffSide `json:"old"`
		New diffSide `json:"new"`
		*ledger.BacklogDiff
	}{sides[0], sides[1], d}
	return a.emit(out, func(w io.Writer) { printDiff(w, sides, d) })
}

// printDiff is bl diff's human form: a summary line, then one block per
// card, marked + created, - removed, ~ changed.
func printDiff(w io.Writer, sides [2]diffSide, d *ledger.BacklogDiff) {
	counts := map[string]int{}
	for _, c := range d.Cards {
		counts[c.Change]++
	}
	var parts []string
	for _, k := range []string{"created", "changed", "removed"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no card changed")
	}
	fmt.Fprintf(w, "backlog from %s to %s: %s; %d event(s) added", sides[0], sides[1], strings.Join(parts, ", "), d.EventsAdded)
	if d.EventsRemoved > 0 {
		fmt.Fprintf(w, ", %d removed", d.EventsRemoved)
	}
	fmt.Fprintln(w)
	for _, c := range d.Cards {
		mark := map[string]string{"created": "+", "removed": "-"}[c.Change]
		if mark == "" {
			mark = "~"
		}
		fmt.Fprintf(w, "%s %s  %s", mark, text(c.ID), text(c.Title))
		if c.Change == "removed" {
			fmt.Fprint(w, "  (removed: the newer side lacks the events that made it)")
		}
		fmt.Fprintln(w)
		for _, f := range c.Fields {
			switch {
			case c.Change == "created" && f.Field == "title":
			case c.Change == "created":
				fmt.Fprintf(w, "    %s: %s\n", f.Field, changeValue(f.New))
			default:
				fmt.Fprintf(w, "    %s: %s → %s\n", f.Field, changeValue(f.Old), changeValue(f.New))
			}
		}
		for _, act := range c.Activity {
			fmt.Fprintf(w, "    %s\n", activityText(act))
		}
		if c.Heartbeats > 0 {
			fmt.Fprintf(w, "    %d heartbeat(s)\n", c.Heartbeats)
		}
	}
	if d.EventsRemoved > 0 {
		fmt.Fprintf(w, "%d event(s) of %s are not in %s (marked removed): a git revert or reset between them, or a diff backwards in history; "+
			"the ledger is grow-only, so reverted events come back at the next merge of a branch that has them: undo with bl commands instead\n",
			d.EventsRemoved, sides[0], sides[1])
	}
}

// activityText is one line of a card's activity: what, by whom, when.
func activityText(act ledger.Activity) string {
	var b strings.Builder
	op := string(act.Op)
	switch act.Op {
	case ledger.OpReview, ledger.OpApprove, ledger.OpReject, ledger.OpClaimReview:
		op = act.Op.Done() // "sent to review by w1", "approved by carol"
	}
	b.WriteString(text(op))
	if act.Owner != "" {
		fmt.Fprintf(&b, " by %s", text(act.Owner))
		if act.Epoch != 0 {
			fmt.Fprintf(&b, " (epoch %d)", act.Epoch)
		}
	} else {
		fmt.Fprintf(&b, " by %s", text(act.Actor))
	}
	fmt.Fprintf(&b, ", %s", stamp(&act.At))
	if act.Reason != "" {
		fmt.Fprintf(&b, ": %q", text(act.Reason))
	}
	if act.Refused {
		b.WriteString("  REFUSED by the fold (a conflict: it changed nothing)")
	}
	if act.Removed {
		b.WriteString("  (removed)")
	}
	return b.String()
}

// gitWork: reading commits needs git.
func (c *DiffCmd) gitWork(*App) string { return "bl diff" }
