package gitsync

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/bl-backlog/bl/ledger"
)

// LeaseRefPrefix starts the names of the lease refs on a remote:
// refs/bl/leases/<namespace>/<card> (see leaseNamespace) holds the lease
// events (claim, heartbeat, release, complete, block,
// fail) of one card that the branch may not hold yet. A lease write
// through a remote is pushed to its card's lease ref alone, with the tip
// it saw as the expected old value, so git's compare-and-swap is per card:
// writes on different cards never contend, and of two writes on one card
// exactly one lands. The branch takes the events in at the next exchange
// (every bl exchange reads the lease refs and commits what the branch
// lacks). Plain git fetches and pushes refs/heads only, so these refs are
// invisible to it.
const LeaseRefPrefix = "refs/bl/leases/"

// leaseNamespace keeps apart the lease refs of backlogs that share a
// remote, and gives one backlog one namespace whatever branch a clone is
// on: a review sent from a feature branch is seen on main. It is the first
// 16 hex digits of the SHA-256 of "backlog ", the backlog's identity and a
// newline (ledger.Config.ID, which bl init writes); a backlog without one
// (made by an older bl) is named by its directory's slash-separated path
// from the worktree root instead (".backlog" for the usual one), so two
// backlogs of one repository stay apart either way. The remote's
// config.json decides: a clone whose own file says otherwise (a backlog
// made with bl init before its first pull) uses the remote's.
func leaseNamespace(id, prefix string) string {
	key := "backlog " + id + "\n"
	if id == "" {
		key = "path " + prefix + "\n"
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// legacyNamespace is the namespace an older bl gave a backlog's lease
// refs: one per branch. Their lines are still read (never written), so
// leases taken before an upgrade stand until the branch holds them.
func legacyNamespace(branch plumbing.ReferenceName, prefix string) string {
	sum := sha256.Sum256([]byte(branch.Short() + "\n" + prefix))
	return hex.EncodeToString(sum[:8])
}

// leasePrefixFor is the prefix of the lease refs of the backlog whose
// identity is id.
func (s *Syncer) leasePrefixFor(id string) string {
	return LeaseRefPrefix + leaseNamespace(id, s.g.prefix) + "/"
}

// leaseRef names the lease ref of card.
func (s *Syncer) leaseRef(card string) plumbing.ReferenceName {
	return plumbing.ReferenceName(s.leasePrefix + refComponent(card))
}

// refComponent is card as the last component of a ref name. Card ids are
// letters, digits, '.', '_' and '-', and git refuses some of them there
// ("a..b", "x.lock", "z."): such an id is written as "=" and its hex ("="
// is no id character, so the two forms never meet). Every other id is
// itself, as lease refs have always been named.
func refComponent(card string) string {
	if strings.Contains(card, "..") || strings.HasSuffix(card, ".") || strings.HasSuffix(card, ".lock") {
		return "=" + hex.EncodeToString([]byte(card))
	}
	return card
}

// cardOfComponent is refComponent's inverse; ok is false for a name that
// is neither form.
func cardOfComponent(c string) (string, bool) {
	if h, ok := strings.CutPrefix(c, "="); ok {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) == 0 {
			return "", false
		}
		return string(b), true
	}
	return c, c != "" && !strings.Contains(c, "/")
}

// A lease ref's commit has the empty tree and the tip before it as parent;
// its message is leaseSubject, the card, a blank line and the ledger lines.
const leaseSubject = "bl lease "

// emptyTree is git's empty tree.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// errLeaseMoved: the card's lease ref moved since it was fetched (another
// clone's lease write on the card landed first), or the fold did not hold
// what the tip holds yet. Nothing was written; fetch again.
var errLeaseMoved = errors.New("lease ref moved")

// leaseView is what the last fetch saw of the remote's lease refs.
type leaseView struct {
	tips     map[string]plumbing.Hash // card → tip of its lease ref
	legacy   map[string]plumbing.Hash // card → tip of its lease ref under legacyNamespace
	lines    map[string][][]byte      // card → the ledger lines of the tip
	inBranch map[string]bool          // event ids in the fetched branch's ledger.jsonl
	pending  int                      // lease lines the fetched branch lacked
	bad      map[string]bool          // cards whose tip had something set aside when read (leasevet.go)
	retired  plumbing.Hash            // the retirement ref's tip (retire.go); zero when there is none
}

// leaseWants records the remote's lease refs from its advertisement and
// returns the tips this repository lacks.
func (s *Syncer) leaseWants(refs storer.ReferenceStorer) []plumbing.Hash {
	s.lv = leaseView{tips: map[string]plumbing.Hash{}, legacy: map[string]plumbing.Hash{}, bad: map[string]bool{}}
	var want []plumbing.Hash
	iter, err := refs.IterReferences()
	if err != nil {
		return nil
	}
	retired := s.retiredRef()
	_ = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Name() == retired {
			s.lv.retired = r.Hash()
			return nil
		}
		name := r.Name().String()
		into := s.lv.tips
		card, ok := strings.CutPrefix(name, s.leasePrefix)
		if !ok && s.legacyPrefix != "" {
			card, ok = strings.CutPrefix(name, s.legacyPrefix)
			into = s.lv.legacy
		}
		if ok {
			card, ok = cardOfComponent(card)
		}
		if !ok || r.Type() != plumbing.HashReference {
			return nil
		}
		into[card] = r.Hash()
		if (s.vetAll || !s.leaseCache().has(r.Hash())) && s.g.repo.Storer.HasEncodedObject(r.Hash()) != nil {
			want = append(want, r.Hash())
		}
		return nil
	})
	return want
}

// withLeaseLines adds to the fetched branch's backlog up the lease
// events its ledger.jsonl lacks, in (at, id) order, so the fold of what
// was fetched is the fold of the remote: branch and lease refs.
//
// A lease line missing from the branch's ledger.jsonl may be in its
// snapshot, compacted: such a line is left out when the branch's fold
// holds its request's receipt for that very event.
func (s *Syncer) withLeaseLines(up ledger.Tree, load ledger.Loader) (ledger.Tree, error) {
	s.lv.lines, s.lv.pending = map[string][][]byte{}, 0
	s.lv.inBranch = ledgerEventIDs(up[ledger.LedgerFile])
	if len(s.lv.tips) == 0 && len(s.lv.legacy) == 0 {
		return up, nil
	}
	var extra [][]byte
	added := map[string]bool{}
	from := map[string]leaseSource{} // line id → the commit it was read from
	lc := s.leaseCache()
	read := func(prefix string, tips map[string]plumbing.Hash) error {
		for _, card := range sortedCards(tips) {
			ref := prefix + refComponent(card)
			lines, err := lc.get(tips[card], s.readLease(ref, card))
			if errors.Is(err, ledger.ErrVersion) {
				return fmt.Errorf("lease ref of %s: %w", card, err)
			}
			if err != nil {
				// Damage in one card's lease ref affects that card at most.
				s.lv.bad[card] = true
				s.b.Warn(refusalMessage([]LeaseRefusal{{Ref: ref, Card: card, Commit: tips[card].String(), Reason: err.Error()}}))
				continue
			}
			for _, l := range lines {
				id := lineID(l)
				if added[id] {
					continue
				}
				added[id] = true
				from[id] = leaseSource{ref: ref, card: card, tip: tips[card]}
				s.lv.lines[card] = append(s.lv.lines[card], l)
				if !s.lv.inBranch[id] {
					extra = append(extra, l)
				}
			}
		}
		return nil
	}
	if err := read(s.leasePrefix, s.lv.tips); err != nil {
		return nil, err
	}
	if err := read(s.legacyPrefix, s.lv.legacy); err != nil {
		return nil, err
	}
	var st *ledger.State // the fold of the fetched branch, once needed
	if _, snap := up[ledger.SnapshotFile]; snap && mayBeCompacted(up[ledger.LedgerFile], extra) {
		var err error
		if st, err = up.FoldWith(load); err != nil {
			return nil, err
		}
		kept := extra[:0]
		for _, l := range extra {
			e, err := ledger.DecodeLine(l)
			if err == nil && e.RequestID != "" {
				if rc, ok := st.Receipt(e.RequestID); ok && rc.Event == e.ID {
					s.lv.inBranch[e.ID] = true
					continue
				}
			}
			kept = append(kept, l)
		}
		extra = kept
	}
	extra, err := s.judgeLeases(up, load, st, extra, from)
	if err != nil {
		return nil, err
	}
	s.saveLeaseCache()
	if len(extra) == 0 {
		return up, nil
	}
	s.lv.pending = len(extra)
	led, err := mergeLines(up[ledger.LedgerFile], extra)
	if err != nil {
		return nil, err
	}
	up[ledger.LedgerFile] = led
	return up, nil
}

// saveLeaseCache writes the cache's entries of the lease refs as last
// fetched.
func (s *Syncer) saveLeaseCache() {
	all := maps.Clone(s.lv.tips)
	for card, tip := range s.lv.legacy {
		all["\x00"+card] = tip
	}
	s.leaseCache().save(all)
}

// leaseCache is this backlog's cache of lease ref lines, read on first use.
func (s *Syncer) leaseCache() *leaseCache {
	if s.lc == nil {
		s.lc = loadLeaseCache(s.b.Dir())
	}
	return s.lc
}

// leaseLines reads the ledger lines of a lease ref's commit that the
// fold may take (vetLease).
func (s *Syncer) leaseLines(card string, tip plumbing.Hash) ([][]byte, error) {
	lines, _, err := s.vetLease(s.leaseRef(card).String(), card, tip)
	return lines, err
}

// checkLease is the ledger.StageCheck of a lease write through the remote,
// run under the backlog lock before the write is staged: a lease write
// touches one card, and the local fold must hold the latest claim the
// card's lease ref holds (a fold older than the tip, a lease ref fetched
// ahead of its branch, is refetched rather than written over).
func (s *Syncer) checkLease(st *ledger.State, w *ledger.Staged) error {
	card := w.Events[0].Card
	for _, e := range w.Events {
		if e.Card != card {
			return fmt.Errorf("a lease write through a remote touches one card, not %s and %s", card, e.Card)
		}
	}
	c, _ := st.Card(card)
	if _, epoch := s.tipClaim(card); c.ClaimEpoch < epoch {
		return errLeaseMoved
	}
	return nil
}

// tipClaim is the claim line with the highest epoch card's lease ref
// holds, and that epoch. A claim the fold set aside counts too
// (judgeLeases): its epochs before may be in a clone that has not pushed
// its branch yet (a protected branch, a claim made with --local), and a
// write over it, or a tip without it, would give the card to two
// acknowledged claims.
func (s *Syncer) tipClaim(card string) ([]byte, int64) {
	line, epoch := latestClaim(s.lv.lines[card])
	for _, tip := range []plumbing.Hash{s.lv.tips[card], s.lv.legacy[card]} {
		if tip.IsZero() || !s.leaseCache().refused[tip] {
			continue
		}
		if raw, _, err := s.vetLease("", card, tip); err == nil {
			if l, e := latestClaim(raw); e > epoch {
				line, epoch = l, e
			}
		}
	}
	return line, epoch
}

// pushLease pushes a staged lease write to its card's lease ref, expecting
// the tip the last fetch saw; the backlog lock is not held. Only once that
// push landed is the write appended locally; a push that lost to another
// clone's write returns errLeaseMoved and leaves nothing behind on either
// side.
//
// The same push carries the staged heartbeats carried (carried.go), each
// to its own card's lease ref expecting the tip the fetch saw. They are
// not one atomic update with the write: a carried heartbeat whose ref
// moved is left out or refused alone, and neither fails the write nor
// the other heartbeats. landed lists the carried heartbeats whose refs
// the remote took.
func (s *Syncer) pushLease(ctx context.Context, w *ledger.Staged, carried []*ledger.Staged) (landed []*ledger.Staged, err error) {
	u, err := s.leaseCommit(w)
	if err != nil {
		return nil, err
	}
	card := u.card
	if s.beforeLeasePush != nil {
		s.beforeLeasePush(card, s.round)
	}
	cmds := []*packp.Command{{Name: u.ref, Old: u.old, New: u.tip}}
	objs := []plumbing.Hash{u.tip, emptyTree}
	if u.old.IsZero() {
		// A new lease ref: it must not re-create one retired since the
		// fetch (retire.go).
		if cmds, objs, err = s.guardCreate(cmds, objs); err != nil {
			return nil, err
		}
	}
	var extra []*leaseUpdate
	if !s.atomicPush {
		// An atomic push (a new lease ref) carries nothing: one refused
		// heartbeat would refuse the claim with it.
		for _, c := range carried {
			if x, err := s.leaseCommit(c); err == nil && x.card != card {
				extra = append(extra, x)
			}
		}
	}
	var sent []*leaseUpdate
	var refused map[plumbing.ReferenceName]error
	err = s.receivePackReport(ctx, func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error) {
		for _, c := range cmds {
			if refTip(refs, c.Name) != c.Old {
				return nil, nil, errLeaseMoved
			}
		}
		all, allObjs := cmds, objs
		for _, x := range extra {
			if refTip(refs, x.ref) == x.old { // a ref that moved is left out
				all = append(slices.Clip(all), &packp.Command{Name: x.ref, Old: x.old, New: x.tip})
				allObjs = append(slices.Clip(allObjs), x.tip)
				sent = append(sent, x)
			}
		}
		return all, allObjs, nil
	}, func(r map[plumbing.ReferenceName]error) { refused = r })
	if refused != nil {
		// The remote reported on each update: the write stands or falls
		// by its own refs alone.
		err = nil
		for _, c := range cmds {
			if e := refused[c.Name]; e != nil && err == nil {
				err = e
			}
		}
	}
	s.atomicPush = false
	if errors.Is(err, errNoAtomic) {
		// A remote that cannot apply two updates as one: lease refs are
		// never retired through it (retire.go), so none can be re-created.
		s.noAtomic = true
		return nil, errLeaseMoved
	}
	switch {
	case err == nil:
		if last := cmds[len(cmds)-1]; last.Name == s.retiredRef() {
			s.lv.retired = last.New
		}
		s.leaseLanded(u)
		pushed := []*leaseUpdate{u}
		for _, x := range sent {
			if refused == nil || refused[x.ref] == nil {
				s.leaseLanded(x)
				landed = append(landed, x.w)
				pushed = append(pushed, x)
			}
		}
		s.saveLeaseCache()
		s.notePushedTips(pushed)
		return landed, nil
	case errors.Is(err, errLeaseMoved) || rejected(err):
		return nil, errLeaseMoved
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, &RemoteError{Remote: s.o.Remote, Op: "push", Err: err}
}

// leaseUpdate is a staged lease write's new lease ref tip.
type leaseUpdate struct {
	w        *ledger.Staged
	card     string
	ref      plumbing.ReferenceName
	old, tip plumbing.Hash
	lines    [][]byte // the new tip's
}

// leaseCommit stores the commit that puts the staged write w on its
// card's lease ref: the new tip keeps what the branch lacks, and the
// latest claim.
func (s *Syncer) leaseCommit(w *ledger.Staged) (*leaseUpdate, error) {
	card := w.Events[0].Card
	old := s.lv.tips[card]
	prev := s.lv.lines[card]
	latest, _ := s.tipClaim(card)
	if latest != nil && !slices.ContainsFunc(prev, func(l []byte) bool { return bytes.Equal(l, latest) }) {
		prev = append([][]byte{latest}, prev...) // set aside by the fold, kept on the tip
	}
	var msg strings.Builder
	msg.WriteString(leaseSubject + card + "\n\n")
	claims := w.Events[0].Op == ledger.OpClaim
	var kept [][]byte
	for _, l := range prev {
		if !s.lv.inBranch[lineID(l)] || (!claims && bytes.Equal(l, latest)) {
			msg.Write(l)
			kept = append(kept, l)
		}
	}
	msg.Write(w.Lines)
	if n := len(kept) + len(w.Events); n > MaxLeaseLines || msg.Len() > MaxLeaseCommit-1024 {
		return nil, &RemoteError{Remote: s.o.Remote, Op: "push", Err: fmt.Errorf("the lease ref of %s would hold %d lines (%d bytes) the branch lacks, more than other clones read; bl sync --push carries them to the branch, then try again", card, n, msg.Len())}
	}
	parent := old
	if s.oversize(old) {
		parent = plumbing.ZeroHash // a tip set aside unread is no history to keep
	}
	tip, err := s.storeLeaseCommit(msg.String(), parent)
	if err != nil {
		return nil, err
	}
	return &leaseUpdate{w: w, card: card, ref: s.leaseRef(card), old: old, tip: tip, lines: append(kept, splitLines(w.Lines)...)}, nil
}

// leaseLanded records a lease ref update the remote took.
func (s *Syncer) leaseLanded(u *leaseUpdate) {
	if s.lv.tips == nil {
		s.lv.tips = map[string]plumbing.Hash{}
	}
	if s.lv.lines == nil {
		s.lv.lines = map[string][][]byte{}
	}
	s.lv.tips[u.card] = u.tip
	s.lv.lines[u.card] = u.lines
	// Lines this clone's fold took (kept) or checked under the lock
	// (the write): the fold need not judge them again.
	s.leaseCache().judge(u.tip, slices.Clone(u.lines), false)
	s.lv.pending += len(u.w.Events)
}

// storeLeaseCommit writes a lease ref's commit (and the empty tree).
func (s *Syncer) storeLeaseCommit(msg string, parent plumbing.Hash) (plumbing.Hash, error) {
	if _, err := s.g.storeTree(nil, true); err != nil {
		return plumbing.ZeroHash, err
	}
	sig := s.signature()
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: emptyTree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	o := s.g.repo.Storer.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.g.store(o)
}

// latestClaim is the claim line with the highest epoch among lines, and
// that epoch (0 when there is none).
func latestClaim(lines [][]byte) ([]byte, int64) {
	var line []byte
	var epoch int64
	for _, l := range lines {
		e, err := ledger.DecodeLine(l)
		if err == nil && e.Op == ledger.OpClaim && e.Epoch >= epoch {
			line, epoch = l, e.Epoch
		}
	}
	return line, epoch
}

// mergeLines adds extra ledger lines to a ledger file's data, keeping the
// (at, id) order when the data is in order: appended when they all come
// after its last line, else merged by stamp.
func mergeLines(data []byte, extra [][]byte) ([]byte, error) {
	type stamped struct {
		line []byte
		e    *ledger.Event
	}
	decode := func(lines [][]byte) ([]stamped, error) {
		out := make([]stamped, 0, len(lines))
		for _, l := range lines {
			e, err := ledger.DecodeLine(l)
			if err != nil {
				return nil, err
			}
			out = append(out, stamped{l, e})
		}
		return out, nil
	}
	order := func(a, b stamped) int {
		if c := a.e.At.Compare(b.e.At); c != 0 {
			return c
		}
		return strings.Compare(a.e.ID, b.e.ID)
	}
	ex, err := decode(extra)
	if err != nil {
		return nil, fmt.Errorf("a lease ref holds a line that does not read: %w", err)
	}
	slices.SortFunc(ex, order)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(slices.Clip(data), '\n')
	}
	lines := splitLines(data)
	after := len(lines) == 0
	if !after {
		if last, err := ledger.DecodeLine(lines[len(lines)-1]); err == nil {
			after = order(stamped{e: last}, ex[0]) < 0
		}
	}
	out := slices.Clip(data)
	if after {
		for _, x := range ex {
			out = append(out, x.line...)
		}
		return out, nil
	}
	all, err := decode(lines)
	if err != nil {
		// A branch ledger that does not read: leave the order to the
		// readers, who settle a union (docs/SYNC.md).
		for _, x := range ex {
			out = append(out, x.line...)
		}
		return out, nil
	}
	all = append(all, ex...)
	slices.SortStableFunc(all, order)
	out = nil
	for _, x := range all {
		out = append(out, x.line...)
	}
	return out, nil
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, append(slices.Clip(data), '\n'))
			break
		}
		out = append(out, data[:i+1:i+1])
		data = data[i+1:]
	}
	return out
}

// mayBeCompacted reports whether any of the lease lines extra could be in
// the branch's snapshot rather than its ledger.jsonl (led): only one not
// after the ledger's first event can, since a snapshot folds events
// before every event its ledger holds. Deciding that reads no snapshot, so
// a round while lease lines wait for the branch costs no more than one
// without. A branch whose files disagree (a merge) may break the rule; a
// line then merged twice is one event, as a union merge's is.
func mayBeCompacted(led []byte, extra [][]byte) bool {
	lines := splitLines(led)
	if len(lines) == 0 {
		return len(extra) > 0
	}
	first, err := ledger.DecodeLine(lines[0])
	if err != nil {
		return true
	}
	for _, l := range extra {
		e, err := ledger.DecodeLine(l)
		if err != nil || !e.At.After(first.At) && !(e.At.Equal(first.At) && e.ID > first.ID) {
			return true
		}
	}
	return false
}

// ledgerEventIDs are the event ids of a ledger file's lines: every line starts
// {"v":N,"id":"…" (the keys come in a fixed order).
func ledgerEventIDs(data []byte) map[string]bool {
	ids := map[string]bool{}
	for _, l := range splitLines(data) {
		if id := lineID(l); id != "" {
			ids[id] = true
		}
	}
	return ids
}

// lineID is the event id of a ledger line, "" when it has none where
// lines keep it.
func lineID(l []byte) string {
	const key = `"id":"`
	i := bytes.Index(l, []byte(key))
	if i < 0 || i > 16 {
		return ""
	}
	rest := l[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

func sortedCards(m map[string]plumbing.Hash) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
