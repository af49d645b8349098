package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// DiffCmd shows what changed in the backlog between two commits.
type DiffCmd struct {
	Revs  []string `arg:"" optional:"" name:"rev" placeholder:"REV" help:"A commit, branch or tag; two to compare two commits, one to compare it with the working backlog; A...B for what B adds since it left A."`
	Merge string   `name:"merge" placeholder:"BRANCH" help:"What merging BRANCH would do to the working backlog (git's union merge of .backlog), without touching the worktree."`
}

func (DiffCmd) Help() string {
	return `What changed in the backlog between two git commits, card by card, for a
reviewer: cards created and removed, fields changed old → new (status
included), and what happened to each card in the events only one side
holds: claims, releases, completions and blocks with their owners, and the
claims the fold refused (the loser of two clones' race). With one REV, the
other side is the working backlog (what bl sync would commit). A REV is
anything git rev-parse takes: HEAD~1, main, a tag, a hash, @{u} (the
upstream), main@{1}, :/text; with one REV as with two. It is resolved
in the repository that holds the shared backlog: from a linked worktree,
HEAD is the main worktree's HEAD, as for bl sync.

A...B (three dots) compares B with the commit where it left A (their
merge base), as git diff A...B does: what a pull request from B adds,
whatever A gained since; A..B is A B. --merge BRANCH shows what merging
BRANCH (git merge, or bl sync with it) would do to the working backlog:
its events joined to this backlog's, folded, the claims that would lose a
race marked REFUSED, without touching the worktree or the index.

For every event it lists a note's text, a fail's or block's reason and a
completion's note; for a refused one, why the fold refused it and who
held the card instead.

It reads only what differs: archive segments both sides hold with the
same bytes are neither compared nor decoded, so a review of a change
costs in proportion to the change, not to the backlog's history. Two
commits are read from the repository's objects (or, for what that read
is not sure of, through one git cat-file), without starting bl-git.

A line of a commit's event files that does not read (a teammate's
damaged line) is set aside, as bl sync quarantines a pulled line: a
warning names the side, its commit, the file and the line, --json lists
them in set_aside, and the diff compares the other lines. A damaged
snapshot in a commit fails (exit 6) naming the commit, as does a commit
holding a backlog file as a symbolic link or a submodule (bl sync
refuses to merge one too).

Events the old commit holds and the new one does not are counted and
marked "removed": a git revert or reset between the two. The ledger is a
grow-only set, so they come back at the next merge of a branch that has
them; undo with bl commands instead.

Examples:

    bl diff HEAD~1
    bl diff @{u}
    bl diff main feature
    bl diff origin/main...HEAD
    bl diff --merge feature
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
	revs, err := c.revisions()
	if err != nil {
		return err
	}
	var sides [2]diffSide
	for i, rev := range revs {
		if rev == "" {
			return usagef("bl diff: a revision is empty")
		}
		sides[i].Rev = rev
	}
	if a.ext.Git == nil && fastDiff(revs, c.Merge) {
		// The lean bl reads the two commits through the system git; what
		// it declines, bl-git runs from the start.
		b, err := a.Open()
		if err != nil {
			return err
		}
		if d, aside, commits, err := diffPairFast(a.ctx, b.Dir(), revs[0], revs[1]); err == nil {
			sides[0].Commit, sides[1].Commit = commits[0], commits[1]
			return emitDiff(a, sides, d, aside)
		}
	}
	git, err := a.needGit("bl diff")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	if c.Merge != "" {
		return c.runMerge(a, git, b)
	}
	var trees [2]ledger.Tree
	var loads [2]ledger.Loader
	if len(revs) == 2 {
		// Two commits: the history they share is not read.
		var commits [2]string
		if trees, loads, commits, err = git.BacklogPairAt(b.Dir(), revs[0], revs[1]); err != nil {
			return err
		}
		sides[0].Commit, sides[1].Commit = commits[0], commits[1]
	} else {
		if trees[0], sides[0].Commit, err = git.BacklogAt(b.Dir(), revs[0]); err != nil {
			return err
		}
		if trees[1], err = b.Tree(a.ctx); err != nil {
			return err
		}
	}
	d, aside, err := diffSettingAside(b.Dir(), sides, trees, loads, func(t [2]ledger.Tree, l [2]ledger.Loader) (*ledger.BacklogDiff, error) {
		return ledger.DiffUnread(t[0], t[1], l[0], l[1])
	})
	if err != nil {
		return err
	}
	return emitDiff(a, sides, d, aside)
}

// emitDiff writes the diff d of sides, as text or JSON, after a warning
// for each line set aside (diffaside.go).
func emitDiff(a *App, sides [2]diffSide, d *ledger.BacklogDiff, aside []ledger.Quarantined) error {
	warnAside(a, sides, aside)
	out := struct {
		Old diffSide `json:"old"`
		New diffSide `json:"new"`
		*ledger.BacklogDiff
		SetAside []ledger.Quarantined `json:"set_aside,omitempty"`
	}{sides[0], sides[1], d, aside}
	return a.emit(out, func(w io.Writer) { printDiff(w, sides, d, asideOn(sides[1], aside)) })
}

// fastDiff reports whether the lean bl reads the commits of bl diff
// itself (diffpair.go): two commits, no merge base, no --merge.
func fastDiff(revs []string, merge string) bool {
	return merge == "" && len(revs) == 2 && !strings.Contains(revs[0], "...") && !strings.Contains(revs[1], "...")
}

// revisions spells the revisions out: A..B is A B, A...B is B against
// the merge base of A and B, an empty side is HEAD; --merge takes none.
func (c *DiffCmd) revisions() ([]string, error) {
	revs := c.Revs
	if len(revs) == 1 && !strings.Contains(revs[0], "...") && strings.Contains(revs[0], "..") {
		a, b, _ := strings.Cut(revs[0], "..")
		revs = []string{orHEAD(a), orHEAD(b)}
	}
	if len(revs) == 1 && strings.Contains(revs[0], "...") {
		_, b, _ := strings.Cut(revs[0], "...")
		revs = []string{revs[0], orHEAD(b)}
	}
	switch {
	case c.Merge != "" && len(revs) > 0:
		return nil, usagef("bl diff --merge BRANCH compares the working backlog with its merge with BRANCH: give no other revision")
	case c.Merge == "" && len(revs) == 0:
		return nil, usagef("bl diff takes a revision: bl diff REV (against the working backlog), bl diff OLD NEW, bl diff A...B or bl diff --merge BRANCH")
	case len(revs) > 2:
		return nil, usagef("bl diff takes one or two revisions: bl diff REV (against the working backlog) or bl diff OLD NEW")
	}
	return revs, nil
}

func orHEAD(rev string) string {
	if rev == "" {
		return "HEAD"
	}
	return rev
}

// runMerge is bl diff --merge: the working backlog against what git's
// union merge with the branch's backlog would make of it, in memory.
func (c *DiffCmd) runMerge(a *App, git Git, b *ledger.Backlog) error {
	theirs, commit, err := git.BacklogAt(b.Dir(), c.Merge)
	if err != nil {
		return err
	}
	ours, err := b.Tree(a.ctx)
	if err != nil {
		return err
	}
	// A line set aside is named by where it is: this backlog, or the
	// branch's commit.
	sides := [2]diffSide{{}, {Rev: c.Merge, Commit: commit}}
	d, aside, err := diffSettingAside(b.Dir(), sides, [2]ledger.Tree{ours, theirs}, [2]ledger.Loader{}, func(t [2]ledger.Tree, _ [2]ledger.Loader) (*ledger.BacklogDiff, error) {
		return ledger.DiffTrees(t[0], ledger.MergeTrees(t[0], t[1]))
	})
	if err != nil {
		return err
	}
	sides[1].Rev = "merge of " + c.Merge
	return emitDiff(a, sides, d, aside)
}

// printDiff is bl diff's human form: a summary line, then one block per
// card, marked + created, - removed, ~ changed.
// newAside: lines of the newer side were set aside, which takes their
// events out of it as a revert would.
func printDiff(w io.Writer, sides [2]diffSide, d *ledger.BacklogDiff, newAside bool) {
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
	if d.EventsRemoved > 0 && newAside {
		fmt.Fprintf(w, "%d event(s) of %s are not in %s (marked removed): the lines of %s set aside above may hold them (they do not read); "+
			"else a git revert or reset between them, or a diff backwards in history\n", d.EventsRemoved, sides[0], sides[1], sides[1])
	} else if d.EventsRemoved > 0 {
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
		fmt.Fprintf(&b, " by %s", nameText(act.Owner))
		if act.Epoch != 0 {
			fmt.Fprintf(&b, " (epoch %d)", act.Epoch)
		}
	} else {
		fmt.Fprintf(&b, " by %s", nameText(act.Actor))
	}
	fmt.Fprintf(&b, ", %s", stamp(&act.At))
	if act.Reason != "" {
		fmt.Fprintf(&b, ": %q", text(act.Reason))
	}
	if act.Text != "" {
		fmt.Fprintf(&b, ": %q", text(act.Text))
	}
	if act.Refused {
		b.WriteString("  REFUSED by the fold (a conflict: it changed nothing)")
		if act.Why != "" {
			fmt.Fprintf(&b, ": %s", text(act.Why))
		}
		if act.Holder != "" {
			fmt.Fprintf(&b, "; %s held the card", nameText(act.Holder))
		}
	}
	if act.Removed {
		b.WriteString("  (removed)")
	}
	return b.String()
}

// gitWork: reading commits needs git.
// Two commits the lean bl reads through the system git first.
func (c *DiffCmd) gitWork(*App) string {
	if revs, err := c.revisions(); err == nil && fastDiff(revs, c.Merge) {
		return ""
	}
	return "bl diff"
}
