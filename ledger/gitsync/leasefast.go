package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/bl-backlog/bl/ledger"
)

// A lease write that ends a lease (complete, release, block, fail) on a
// card whose lease ref this clone wrote last is first tried without a
// fetch, in one push: the card's lease ref, expecting the tip this clone
// pushed, and the branch, expecting the remote-tracking ref, as one
// atomic update. If neither moved, the remote is what this clone last saw
// of it as far as the card goes (every write on a card goes through its
// lease ref or the branch), so the write checked against the local fold
// stands, and the branch holds it with everything else this clone holds:
// a claim and its complete cost one fetch and two pushes. If either moved,
// or the remote cannot push atomically, the remote refuses the whole
// update and nothing was written. The write then runs the ordinary rounds
// (fetch, stage, push the lease ref, carry), except that when only the
// branch had moved, the round after the fetch first tries the one atomic
// push again (atomicLand, on what was fetched): with other clones
// completing meanwhile a complete still costs one fetch and two pushes.
//
// The tips this clone pushed are kept in the backlog's cache directory
// (leaseTipsFile), by card; a fetch drops those the remote no longer
// holds. A file git tracks is a teammate's bytes (a force-add checked
// out here), so it is neither believed nor written (ledger.TrustLocal).
// The file also names the remote commit this backlog last took in
// (applied): the push without a fetch is tried only while the
// remote-tracking ref is that commit, so the commit it pushes never
// leaves out events the branch holds (a fetch in another worktree, or a
// process killed between its fetch and its rebase, moves the ref first). The branch commit is built before the write is appended locally:
// the backlog's files as read under the lock with the staged lines added,
// checked to be the files the write was staged on, and to hold the
// remote-tracking commit's backlog (holdsCommit). The local branch moves
// to it only once the write is appended.

// leaseTipsFile is the cache file of the lease ref tips this clone
// pushed: a header line, "applied <commit>", then "<tip> <card>" lines.
const leaseTipsFile = "leasetips"

const leaseTipsHeader = "bl lease tips 2\n"

// leaseTipsMost bounds the file: the oldest entries go first.
const leaseTipsMost = 256

// errNotFast: the write is not one the fast path takes; nothing was
// written, and the ordinary rounds run it.
var errNotFast = errors.New("not a fast lease write")

// leaseTips is the cache of the lease ref tips this clone pushed, in the
// order they were written.
type leaseTips struct {
	dir     string // the backlog
	path    string
	applied plumbing.Hash // the remote commit this backlog last took in
	cards   []string
	tips    map[string]plumbing.Hash
}

func (s *Syncer) loadLeaseTips() *leaseTips {
	t := &leaseTips{dir: s.b.Dir(), path: filepath.Join(s.b.Dir(), ledger.CacheDir, leaseTipsFile), tips: map[string]plumbing.Hash{}}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return t
	}
	if !ledger.TrustLocal(s.b.Dir(), ledger.CacheDir+"/"+leaseTipsFile) {
		t.path = "" // a teammate's (git tracks it): neither believed nor written
		return t
	}
	rest, ok := bytes.CutPrefix(data, []byte(leaseTipsHeader))
	line, rest, _ := bytes.Cut(rest, []byte{'\n'})
	applied, ok2 := strings.CutPrefix(string(line), "applied ")
	if !ok || !ok2 || !plumbing.IsHash(applied) || len(applied) != 40 {
		return t
	}
	t.applied = plumbing.NewHash(applied)
	for _, l := range strings.Split(string(rest), "\n") {
		if l == "" {
			continue
		}
		h, card, ok := strings.Cut(l, " ")
		if !ok || len(h) != 40 || !plumbing.IsHash(h) || card == "" || strings.ContainsAny(card, " \t\r/") {
			return &leaseTips{dir: t.dir, path: t.path, tips: map[string]plumbing.Hash{}} // not the format written: no cache
		}
		t.set(card, plumbing.NewHash(h))
	}
	return t
}

// set records card's tip, as the newest entry; a zero tip drops it.
func (t *leaseTips) set(card string, tip plumbing.Hash) {
	if _, ok := t.tips[card]; ok {
		t.cards = slices.DeleteFunc(t.cards, func(c string) bool { return c == card })
		delete(t.tips, card)
	}
	if tip.IsZero() {
		return
	}
	t.cards = append(t.cards, card)
	t.tips[card] = tip
	for len(t.cards) > leaseTipsMost {
		delete(t.tips, t.cards[0])
		t.cards = t.cards[1:]
	}
}

// save writes the file; a failure costs only a fetch later.
func (t *leaseTips) save() {
	if t.path == "" {
		return
	}
	var b bytes.Buffer
	b.WriteString(leaseTipsHeader)
	fmt.Fprintf(&b, "applied %s\n", t.applied)
	for _, c := range t.cards {
		fmt.Fprintf(&b, "%s %s\n", t.tips[c], c)
	}
	_ = writeCacheFile(t.dir, ledger.CacheDir+"/"+leaseTipsFile, b.Bytes())
}

// notePushedTips records the lease ref tips a push landed, for the next
// lease write on those cards (see above). Only a remote that pushes
// atomically gets any, and only while it holds no lease refs under the
// legacy namespace, whose lines the fast path would not see.
func (s *Syncer) notePushedTips(us []*leaseUpdate) {
	if !s.atomicSeen || len(s.lv.legacy) > 0 || s.remoteName == "" || len(us) == 0 {
		return
	}
	t := s.loadLeaseTips()
	for _, u := range us {
		t.set(u.card, u.tip)
	}
	t.applied = s.applied
	t.save()
}

// noteApplied records that this backlog took in the remote commit s.applied
// since the tips were noted (a carry pushed it).
func (s *Syncer) noteApplied() {
	if s.applied.IsZero() {
		return
	}
	if t := s.loadLeaseTips(); len(t.cards) > 0 && t.applied != s.applied {
		t.applied = s.applied
		t.save()
	}
}

// settleLeaseTips drops the recorded tips the remote's lease refs, as just
// fetched, no longer hold: a write on such a card would only be refused.
func (s *Syncer) settleLeaseTips() {
	if _, err := os.Stat(filepath.Join(s.b.Dir(), ledger.CacheDir, leaseTipsFile)); err != nil {
		return
	}
	t := s.loadLeaseTips()
	changed := false
	for _, card := range slices.Clone(t.cards) {
		if s.lv.tips[card] != t.tips[card] || len(s.lv.legacy) > 0 {
			t.set(card, plumbing.ZeroHash)
			changed = true
		}
	}
	if changed {
		t.save()
	}
}

// fastLease tries the write without a fetch (see above). done is false
// when it wrote nothing and the ordinary rounds should run it; then s.lv
// is left empty, for their fetch to fill.
func (s *Syncer) fastLease(ctx context.Context, res *Result, rid string, write func(ctx context.Context) (string, error)) (done bool, card *ledger.Card, err error) {
	if s.remoteName == "" || s.o.BeforeCommit != nil || s.noAtomic {
		return false, nil, nil
	}
	tips := s.loadLeaseTips()
	if len(tips.cards) == 0 || tips.applied.IsZero() {
		return false, nil, nil
	}
	defer func() {
		if !done {
			s.lv = leaseView{}
		}
	}()
	remote, err := s.g.refHash(s.trackingRef())
	if err != nil || remote.IsZero() || remote != tips.applied {
		return false, nil, nil
	}
	local, err := s.g.refHash(s.branch)
	if err != nil || local.IsZero() {
		return false, nil, nil
	}
	checkedOut := false
	if cur, err := s.g.currentBranch(); err == nil && cur == s.branch {
		checkedOut = true
	}
	// The branch must hold the remote's commit: the new commit then sits
	// on the local branch alone, and nothing outside the backlog changes.
	if parents, _, err := s.parents(local, remote, checkedOut); err != nil || len(parents) != 1 || parents[0] != local {
		return false, nil, nil
	}
	// The lease view of the remote as this clone left it: the tips it
	// pushed and their lines (and, once a write is staged, the
	// remote-tracking branch's events).
	s.lv = leaseView{tips: map[string]plumbing.Hash{}, legacy: map[string]plumbing.Hash{}, lines: map[string][][]byte{}, bad: map[string]bool{}}
	lc := s.leaseCache()
	for _, c := range tips.cards {
		lines, err := lc.get(tips.tips[c], func(h plumbing.Hash) ([][]byte, error) {
			lines, bad, err := s.vetLease("", c, h)
			if err == nil && len(bad) > 0 {
				err = errNotFast
			}
			return lines, err
		})
		if err == nil && !lc.refused[tips.tips[c]] {
			s.lv.tips[c], s.lv.lines[c] = tips.tips[c], lines
		}
	}
	staged, err := s.b.Stage(ctx, func(st *ledger.State, w *ledger.Staged) error {
		e := w.Events[0]
		if s.lv.tips[e.Card].IsZero() || !carriesLeases(e.Op) {
			return errNotFast
		}
		return s.checkLease(st, w)
	}, func(ctx context.Context) error {
		_, err := write(ctx)
		return err
	})
	if staged == nil {
		// Not a write on a card this clone holds the lease ref of, a
		// replay, or refused here: the ordinary rounds answer it as they
		// would have.
		return false, nil, nil
	}
	res.Tries = 1
	up, err := s.g.readBacklogFiles(remote, func(name string) bool { return name == ledger.LedgerFile })
	if err != nil {
		return false, nil, nil
	}
	s.lv.inBranch = ledgerEventIDs(up[ledger.LedgerFile])
	done, card, moved, err := s.atomicLand(ctx, res, rid, staged, remote, local, checkedOut, false)
	if !done {
		// The next round fetches, and tries the one push again before
		// the lease ref alone, unless the lease ref is what moved.
		s.fastRetry = !moved
	}
	return done, card, err
}

// atomicLand commits the staged write w onto the local branch (at local)
// and the remote's (at remote), pushes the commit and the card's lease
// ref as one atomic update, and appends w once that landed. done is false
// when nothing was written (the remote refused the update as a whole, or
// the backlog moved before the push): moved then says whether the card's
// lease ref was what moved. fetched: s.lv is the remote as just fetched,
// so once the branch holds w it holds everything this clone holds.
func (s *Syncer) atomicLand(ctx context.Context, res *Result, rid string, w *ledger.Staged, remote, local plumbing.Hash, checkedOut, fetched bool) (done bool, card *ledger.Card, moved bool, err error) {
	// The files the write was staged on: nothing appended since.
	f, err := s.treeForCommit(ctx, func(st *ledger.State) error {
		if last := st.Last(); last.ID != "" && !last.Before(w.Events[0]) {
			return errNotFast
		}
		return nil
	})
	if err != nil {
		return false, nil, false, nil
	}
	led := f.t[ledger.LedgerFile]
	if len(led) > 0 && led[len(led)-1] != '\n' || !s.holdsCommit(f, remote) {
		return false, nil, false, nil
	}
	f.t = maps.Clone(f.t)
	f.t[ledger.LedgerFile] = append(slices.Clip(led), w.Lines...)
	head, committed, msg, index, err := s.buildCommit(f, remote, local, checkedOut)
	if err != nil || !committed {
		return false, nil, false, nil
	}
	u, err := s.leaseCommit(w)
	if err != nil {
		return false, nil, false, nil
	}
	objs, err := s.objectsToSend(head, remote)
	if err != nil {
		return false, nil, false, nil
	}
	if s.beforeFastPush != nil && s.beforeFastPush() {
		return true, nil, false, errKilled
	}
	if s.beforeLeasePush != nil {
		s.beforeLeasePush(u.card, s.round) // round 0: the push without a fetch
	}
	s.atomicPush = true
	err = s.receivePack(ctx, func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error) {
		moved = refTip(refs, u.ref) != u.old
		if moved || refTip(refs, s.branch) != remote {
			return nil, nil, errLeaseMoved
		}
		return []*packp.Command{{Name: u.ref, Old: u.old, New: u.tip}, {Name: s.branch, Old: remote, New: head}},
			append(objs, u.tip, emptyTree), nil
	})
	s.atomicPush = false
	tips := s.loadLeaseTips()
	if err != nil {
		if ctx.Err() != nil {
			return true, nil, false, ctx.Err()
		}
		// Refused as a whole, or not known to have landed: the ordinary
		// rounds fetch, and a write that did land is then a replay.
		if errors.Is(err, errNoAtomic) {
			s.noAtomic = true
		}
		if moved || !rejected(err) && !errors.Is(err, errLeaseMoved) {
			moved = true // not known: the ordinary rounds start again
		}
		tips.set(u.card, plumbing.ZeroHash)
		tips.save()
		return false, nil, moved, nil
	}
	_ = s.g.setRef(s.trackingRef(), head)
	if s.afterFastPush != nil && s.afterFastPush() {
		return true, nil, false, errKilled
	}
	res.Pushed, res.Commit = true, hashString(head)
	res.Committed, res.Message = true, msg
	if w.Events[0].Op == ledger.OpComplete {
		tips.set(u.card, plumbing.ZeroHash) // the lease is over
	} else {
		tips.set(u.card, u.tip)
	}
	var cards []ledger.Card
	err = outwaitLock(func() (err error) {
		cards, err = s.b.AppendStaged(ctx, w)
		return err
	})
	if err == nil {
		// Appended in place: the backlog is the files committed.
		s.applied, tips.applied = head, head
	}
	tips.save()
	if err == nil {
		if s.g.updateRef(s.branch, local, head) == nil && checkedOut {
			index()
		}
		rolled := false
		_ = s.b.View(func(st *ledger.State, _ time.Time) error {
			rolled = st.Last().ID != w.Events[len(w.Events)-1].ID
			return nil
		})
		if rolled {
			// The completion closed epics (or another process appended):
			// the branch lacks those events yet.
			s.lv.pending++
			s.carry(ctx, res, head, "")
			s.noteApplied()
		} else if fetched {
			s.retire(ctx, false) // the branch holds what this clone holds
		}
		return true, &cards[0], false, nil
	}
	if !errors.Is(err, ledger.ErrStageMoved) {
		return true, nil, false, s.landFailed(w, err)
	}
	// This backlog moved meanwhile: a pull brings the write in from the
	// branch, and carry commits and pushes what else this clone holds.
	c, err := s.landStaged(ctx, res, rid, w)
	if err != nil {
		return true, nil, false, err
	}
	if now, err := s.g.refHash(s.trackingRef()); err == nil {
		s.carry(ctx, res, now, w.Events[0].ID)
	}
	s.noteApplied()
	return true, &c, false, nil
}

// errKilled: a test stopped the write where a crash could (beforeFastPush,
// afterFastPush), leaving what a killed process leaves.
var errKilled = errors.New("stopped by a test")

// holdsCommit reports whether the backlog's files f hold the events of
// the remote commit: its ledger a byte prefix of theirs, its snapshot and
// archive segments the same blobs (a config edited here is no event).
// The commit pushed without the ordinary rounds replaces the branch's
// backlog with f: a backlog rewound by hand (git checkout OLD -- .backlog), or a
// snapshot this clone rebuilt, would otherwise take events off the
// branch's tip. Those go the ordinary way, which merges first.
func (s *Syncer) holdsCommit(f backlogFiles, remote plumbing.Hash) bool {
	events := func(name string) bool { return name == ledger.LedgerFile || mayBeUnread(name) }
	up, hashes, err := s.g.readBacklogUnread(remote, events, func(string, plumbing.Hash) bool { return true })
	if err != nil {
		return false
	}
	for name, h := range hashes {
		data, ok := f.t[name]
		switch {
		case !ok:
			return false
		case name == ledger.LedgerFile:
			if !bytes.HasPrefix(data, up[name]) {
				return false
			}
		case data == nil:
			if f.blobs[name] != h {
				return false
			}
		default:
			if plumbing.ComputeHash(plumbing.BlobObject, s.g.clean(name, data)) != h {
				return false
			}
		}
	}
	return true
}
