package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync/result"
)

// Anyone who may push refs/bl/* may write a lease ref, including someone
// who may not push the branch. So what a lease ref holds is vetted before
// anything of it is folded: a lease ref carries only the lease events of
// its own card, and whatever else it holds is set aside — reported once
// (when this clone first reads that commit), never folded, and never
// carried to the branch. The lease events left are judged by the fold
// (judgeLeases): one whose owner or epoch it refuses is set aside the same
// way, while one it refuses for another reason (a race with a branch edit)
// stays a recorded conflict.

// MaxLeaseCommit bounds the size of a lease ref's commit object: one
// larger is refused unread. A lease ref's tip holds at most
// leaseLinesCarried lines the branch lacks, the latest claim and the new
// write (MaxLeaseLines); a lease line is a few hundred bytes, up to
// MaxCheckpoint more for a heartbeat's checkpoint.
const (
	MaxLeaseCommit = 256 << 10
	MaxLeaseLines  = 32
)

// LeaseRefusal is what of a lease ref's commit is set aside: one line,
// or the whole commit (Line 0).
type LeaseRefusal = result.LeaseRefusal

// refusalText is one refusal without its ref and commit.
func refusalText(r LeaseRefusal) string {
	if r.Line == 0 {
		return r.Reason
	}
	return fmt.Sprintf("line %d: %s", r.Line, r.Reason)
}

// leaseOp reports whether op is a lease event, the only kind a lease ref
// may carry: what bl claim, heartbeat, release, complete (and complete
// --review), fail and block write through a remote.
func leaseOp(op ledger.Op) bool {
	switch op {
	case ledger.OpClaim, ledger.OpHeartbeat, ledger.OpRelease, ledger.OpComplete, ledger.OpFail, ledger.OpBlock, ledger.OpReview:
		return true
	}
	return false
}

// vetLease reads the commit tip of card's lease ref and returns the lines
// it may carry and what it sets aside. A commit over MaxLeaseCommit is
// refused before it is read; one that cannot be read at all is an error
// (the fetch may not have brought it yet).
func (s *Syncer) vetLease(ref, card string, tip plumbing.Hash) ([][]byte, []LeaseRefusal, error) {
	whole := func(reason string) ([][]byte, []LeaseRefusal, error) {
		return nil, []LeaseRefusal{{Ref: ref, Card: card, Commit: tip.String(), Reason: reason}}, nil
	}
	if sz, ok := s.g.repo.Storer.(interface {
		EncodedObjectSize(plumbing.Hash) (int64, error)
	}); ok {
		n, err := sz.EncodedObjectSize(tip)
		if err != nil {
			return nil, nil, fmt.Errorf("read commit %s: %w", tip, err)
		}
		if n > MaxLeaseCommit {
			return whole(fmt.Sprintf("the commit is %d bytes, more than a lease ref's %d: refused unread", n, MaxLeaseCommit))
		}
	}
	c, err := s.g.commit(tip)
	if err != nil {
		return nil, nil, err
	}
	if c.TreeHash != emptyTree {
		return whole("the commit has files; a lease ref's commit has the empty tree")
	}
	_, body, _ := strings.Cut(c.Message, "\n\n")
	var raw []string
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			raw = append(raw, l)
		}
	}
	if len(raw) > MaxLeaseLines {
		return whole(fmt.Sprintf("the commit holds %d lines, more than a lease ref's %d", len(raw), MaxLeaseLines))
	}
	var out [][]byte
	var bad []LeaseRefusal
	for i, l := range raw {
		line := []byte(l + "\n")
		reason := ""
		e, err := ledger.DecodeLine(line)
		switch {
		case errors.Is(err, ledger.ErrVersion):
			return nil, nil, err // an event this bl cannot read: never set aside
		case err != nil:
			reason = fmt.Sprintf("does not read: %v", err)
		case e.Card != card:
			reason = fmt.Sprintf("an event of card %s, not of %s", e.Card, card)
		case !leaseOp(e.Op):
			reason = fmt.Sprintf("a %s event, not a lease event", e.Op)
		}
		if reason != "" {
			bad = append(bad, LeaseRefusal{Ref: ref, Card: card, Commit: tip.String(), Line: i + 1, Reason: reason})
			continue
		}
		out = append(out, line)
	}
	return out, bad, nil
}

// readLease is vetLease as the fold's reads use it: what is set aside is
// reported (once: the lines kept are cached by commit) and remembered for
// this call.
func (s *Syncer) readLease(ref, card string) func(plumbing.Hash) ([][]byte, error) {
	return func(tip plumbing.Hash) ([][]byte, error) {
		lines, bad, err := s.vetLease(ref, card, tip)
		if err != nil {
			return nil, err
		}
		if len(bad) > 0 {
			s.lv.bad[card] = true
			s.b.Warn(refusalMessage(bad))
		}
		return lines, nil
	}
}

// refusalMessage says in one line what of one lease commit was set aside.
func refusalMessage(bad []LeaseRefusal) string {
	var why []string
	for i, r := range bad {
		if i == 3 {
			why = append(why, fmt.Sprintf("and %d more", len(bad)-i))
			break
		}
		why = append(why, refusalText(r))
	}
	what := "the commit"
	if bad[0].Line > 0 {
		what = fmt.Sprintf("%d line(s)", len(bad))
	}
	return fmt.Sprintf("lease ref %s at commit %s: set aside %s (%s); not folded and never carried to the branch (bl doctor --remote lists bad lease refs and can retire one)",
		bad[0].Ref, bad[0].Commit, what, strings.Join(why, "; "))
}

// oversize reports whether commit h is larger than MaxLeaseCommit.
func (s *Syncer) oversize(h plumbing.Hash) bool {
	if h.IsZero() {
		return false
	}
	sz, ok := s.g.repo.Storer.(interface {
		EncodedObjectSize(plumbing.Hash) (int64, error)
	})
	if !ok {
		return false
	}
	n, err := sz.EncodedObjectSize(h)
	return err == nil && n > MaxLeaseCommit
}

// quarantine takes out of up, the backlog files of the fetched commit
// remote, every event line that does not read (ledger.QuarantineLines):
// the rest folds and works, each line is listed for bl doctor and warned
// of the first time this clone meets it, and since the backlog this clone
// commits lacks it, its next push leaves it out of the branch.
func (s *Syncer) quarantine(remote plumbing.Hash, up ledger.Tree) error {
	var bad []ledger.Quarantined
	for name, data := range up {
		if data == nil || (name != ledger.LedgerFile && !strings.HasPrefix(name, ledger.ArchiveDir+"/")) {
			continue
		}
		if kept, q := ledger.QuarantineLines(data, s.remoteLabel(), remote.String(), name); q != nil {
			up[name], bad = kept, append(bad, q...)
		}
	}
	// A ledger line giving an archived event's id to another event.
	bad = append(bad, ledger.QuarantineReused(s.b.Dir(), up, s.remoteLabel(), remote.String())...)
	// The snapshot is a cache of those events: one that does not read, or
	// that they do not produce, is rebuilt from them.
	local, _ := os.ReadFile(filepath.Join(s.b.Dir(), ledger.SnapshotFile))
	q, err := ledger.SettleSnapshot(s.b.Dir(), up, local, s.remoteLabel(), remote.String())
	if err != nil {
		return err
	}
	bad = append(bad, q...)
	if len(bad) == 0 {
		return nil
	}
	fresh, err := ledger.RecordQuarantine(s.b.Dir(), bad)
	if err != nil {
		return err
	}
	for _, q := range fresh {
		s.b.Warn(ledger.QuarantineMessage(q))
	}
	return nil
}

// leaseSource is where withLeaseLines read a lease line: the card's lease
// ref and its tip.
type leaseSource struct {
	ref, card string
	tip       plumbing.Hash
}

// judgeLeases sets aside the lease lines of extra (those the fetched
// branch lacks, from) that the fold refuses for their owner or epoch
// (leaseRefused): folded onto the fetched branch (up; st is its fold when
// the caller has it already), with the lease lines before them in (at, id)
// order. Each commit is judged once: its lines as judged are cached, so
// a call whose lease lines were all judged before folds nothing more.
func (s *Syncer) judgeLeases(up ledger.Tree, load ledger.Loader, st *ledger.State, extra [][]byte, from map[string]leaseSource) ([][]byte, error) {
	lc := s.leaseCache()
	fresh := map[plumbing.Hash]leaseSource{}
	for _, l := range extra {
		if src := from[lineID(l)]; !lc.judged[src.tip] {
			fresh[src.tip] = src
		}
	}
	if len(fresh) == 0 {
		return extra, nil
	}
	var refused map[string]string // event id → why
	judge := func(st *ledger.State) (err error) {
		refused, err = foldLeases(st, up[ledger.LedgerFile], extra)
		return err
	}
	var err error
	if st != nil {
		err = judge(st)
	} else {
		// A snapshot left unread is this clone's own (readBacklogUnread):
		// read lazily, the fold decodes only the cards its lines touch.
		err = up.FoldOnSnapshot(s.b.Dir(), load, judge)
	}
	if err != nil {
		return nil, err
	}
	bad := map[plumbing.Hash][]LeaseRefusal{}
	kept := extra[:0:0]
	for _, l := range extra {
		id := lineID(l)
		why, no := refused[id]
		if !no {
			kept = append(kept, l)
			continue
		}
		src := from[id]
		bad[src.tip] = append(bad[src.tip], LeaseRefusal{Ref: src.ref, Card: src.card, Commit: src.tip.String(), Line: s.leaseLineNumber(src.tip, l), Reason: why})
		s.lv.lines[src.card] = slices.DeleteFunc(s.lv.lines[src.card], func(x []byte) bool { return lineID(x) == id })
		s.lv.bad[src.card] = true
	}
	for tip := range fresh {
		if b := bad[tip]; len(b) > 0 {
			s.b.Warn(refusalMessage(b))
		}
		lc.judge(tip, slices.DeleteFunc(slices.Clone(lc.lines[tip]), func(x []byte) bool { _, no := refused[lineID(x)]; return no }), len(bad[tip]) > 0)
	}
	return kept, nil
}

// foldLeases folds the lease lines extra, in (at, id) order, onto st (the
// fold of the fetched branch, whose ledger.jsonl is branch) and returns,
// by event id and with why, those the fold refuses for their owner or
// epoch (leaseRefused): they are not folded, so the lines after them are
// judged without them. Once a card's lease line is stamped before a
// change the branch made to the card, the fold of branch and lease lines
// merged (mergeLines) takes them in another order than this one: its
// later lease lines are not judged, and stay recorded conflicts if the
// fold refuses them.
func foldLeases(st *ledger.State, branch []byte, extra [][]byte) (map[string]string, error) {
	evs := make([]*ledger.Event, 0, len(extra))
	for _, l := range extra {
		e, err := ledger.DecodeLine(l)
		if err != nil {
			return nil, err // vetLease read every one
		}
		evs = append(evs, e)
	}
	slices.SortStableFunc(evs, func(a, b *ledger.Event) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	last := lastStamps(branch, evs)
	misordered := map[string]bool{}
	refused := map[string]string{}
	for _, e := range evs {
		before, _ := st.Card(e.Card)
		if !e.At.After(last[e.Card]) || e.At.Before(before.UpdatedAt) {
			misordered[e.Card] = true
		}
		if err := st.Check(e); err != nil && !misordered[e.Card] {
			if why := leaseRefused(before, e, err); why != "" {
				refused[e.ID] = why
				continue
			}
		}
		if err := st.Apply(e); err != nil && errors.Is(err, ledger.ErrCorrupt) {
			return nil, err
		}
	}
	return refused, nil
}

// lastStamps is, for each card of evs, the latest stamp of its events in
// the ledger file data.
func lastStamps(data []byte, evs []*ledger.Event) map[string]time.Time {
	last := map[string]time.Time{}
	for _, e := range evs {
		if _, done := last[e.Card]; done {
			continue
		}
		last[e.Card] = time.Time{}
		needle := []byte(`"card":"` + e.Card + `"`)
		for rest := data; ; {
			i := bytes.Index(rest, needle)
			if i < 0 {
				break
			}
			start := bytes.LastIndexByte(rest[:i], '\n') + 1
			end := len(rest)
			if j := bytes.IndexByte(rest[i:], '\n'); j >= 0 {
				end = i + j + 1
			}
			if l, err := ledger.DecodeLine(rest[start:end]); err == nil && l.Card == e.Card && l.At.After(last[e.Card]) {
				last[e.Card] = l.At
			}
			rest = rest[end:]
		}
	}
	return last
}

// leaseLineNumber is the 1-based place of line l in the message of the
// lease commit tip, as vetLease numbers its lines (0 when not found).
func (s *Syncer) leaseLineNumber(tip plumbing.Hash, l []byte) int {
	c, err := s.g.commit(tip)
	if err != nil {
		return 0
	}
	_, body, _ := strings.Cut(c.Message, "\n\n")
	n, want := 0, strings.TrimSpace(string(l))
	for _, x := range strings.Split(body, "\n") {
		if x = strings.TrimSpace(x); x == "" {
			continue
		}
		if n++; x == want {
			return n
		}
	}
	return 0
}

// leaseRefused says why a lease event the fold refuses (conflict) names an
// owner or epoch the fold does not accept, given its card just before it
// ("" when the refusal is of another kind, which the fold records as a
// conflict: a lease event racing with a branch edit, docs/SYNC.md). A
// claim must take the next epoch or an earlier one (a claim made without
// the remote, merged later, may have taken it first) and not a card that
// another owner holds at the epoch before it; any other lease event names
// the card's holder and epoch while someone holds it.
func leaseRefused(before ledger.Card, e *ledger.Event, conflict error) string {
	if before.ID == "" {
		return ""
	}
	held := before.Status == ledger.StatusClaimed
	if e.Op == ledger.OpClaim {
		switch {
		case e.Epoch > before.ClaimEpoch+1:
			return fmt.Sprintf("a claim by %s at epoch %d the fold refuses: the lease is at epoch %d", e.Owner, e.Epoch, before.ClaimEpoch)
		case held && e.Epoch == before.ClaimEpoch+1 && before.ClaimOwner != e.Owner && errors.Is(conflict, ledger.ErrConflict):
			return fmt.Sprintf("a claim by %s at epoch %d the fold refuses: %s holds the card at epoch %d", e.Owner, e.Epoch, before.ClaimOwner, before.ClaimEpoch)
		}
		return ""
	}
	if !errors.Is(conflict, ledger.ErrFenced) || !held || e.Owner == "" {
		return ""
	}
	if e.Owner != before.ClaimOwner || (e.Epoch != 0 && e.Epoch != before.ClaimEpoch) {
		return fmt.Sprintf("a %s by %s at epoch %d the fold refuses: %s holds the card at epoch %d", e.Op, e.Owner, e.Epoch, before.ClaimOwner, before.ClaimEpoch)
	}
	return ""
}
