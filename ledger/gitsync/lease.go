package gitsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bl-backlog/bl/ledger"
)

// Claim claims a card through the remote. Each round fetches the remote
// (its branch and its lease refs, see LeaseRefPrefix) and folds it in,
// picks the best claimable card — after a lost round, one at random among
// the first claimSpread of the best card's priority, so clones racing at
// once spread out over the cards — and claims it: the claim is pushed to that card's lease ref, expecting the
// tip the fetch saw, and appended locally only once that push landed. The
// card is returned only then. A push that lost to another clone's write on
// the card leaves nothing behind on either side, and the next round picks
// again. A nil card means nothing was claimable.
//
// A retry of a claim this clone already recorded (the same request id)
// answers as the first did, after pushing the claim if the remote lacks
// it. Every call ends by carrying to the branch what this clone holds that
// the branch lacks (carry).
func (s *Syncer) Claim(ctx context.Context, req ledger.ClaimRequest) (*ledger.Card, Result, error) {
	res := s.result()
	release, err := s.holdRequest(ctx, req.RequestID)
	if err != nil {
		return nil, res, err
	}
	defer release()
	rid := attemptID(req.RequestID, 1)
	var card *ledger.Card
	res, landed, err := s.leaseRounds(ctx, rid, false, func(ctx context.Context) (string, error) {
		if err := s.renamedError(req.ID); err != nil {
			return "", err
		}
		c, err := s.claimOnce(ctx, req, rid, s.round)
		card = c
		if c == nil {
			return "", err
		}
		return c.ID, err
	})
	if err != nil {
		return nil, res, err
	}
	if landed != nil {
		card = landed
	}
	return card, res, nil
}

// renamedError refuses a lease write that names a card this call's pull
// just renamed (the remote created its id too, repair.renameCollisions):
// the id now names the remote's card, not the one the caller meant. The
// write is refused before it is staged or pushed, so nothing is written.
func (s *Syncer) renamedError(id string) error {
	if to, ok := s.renamed[id]; ok && id != "" {
		return ledger.Errorf(ledger.ErrIDCollision, "card %s was also created on %s, and yours is now %s: %s names the remote's card, so nothing was written; name %s for yours", id, s.o.Remote, to, id, to)
	}
	return nil
}

// claimSpread is how many of the best claimable cards a remote claim
// picks among.
const claimSpread = 16

// claimOnce claims locally, publishing to the lease ref first: the card
// the request names, the card a recorded request claimed, or one of the
// best claimable cards. A nil card: nothing claimable.
func (s *Syncer) claimOnce(ctx context.Context, req ledger.ClaimRequest, rid string, round int) (*ledger.Card, error) {
	r := req
	r.RequestID = rid
	recorded := false
	if err := s.b.View(func(st *ledger.State, _ time.Time) error {
		_, recorded = st.Receipt(rid)
		return nil
	}); err != nil {
		return nil, err
	}
	if r.ID != "" || recorded {
		return s.b.Claim(ctx, r)
	}
	for try := range 5 {
		spread := 1 // the best card, as a local claim picks
		if round > 1 || try > 0 {
			spread = claimSpread // others race for it: spread out
		}
		var top []ledger.Card
		if err := s.b.View(func(st *ledger.State, now time.Time) error {
			top = st.PickTop(req.Filter(), now, spread)
			return nil
		}); err != nil {
			return nil, err
		}
		if len(top) == 0 {
			return nil, nil
		}
		// Never a card of lower priority than the best one.
		n := 1
		for n < len(top) && top[n].Priority == top[0].Priority {
			n++
		}
		pick := mrand.N[int]
		if s.pick != nil {
			pick = s.pick
		}
		r.ID = top[pick(n)].ID
		c, err := s.b.Claim(ctx, r)
		if errors.Is(err, ledger.ErrConflict) || errors.Is(err, ledger.ErrNotFound) {
			continue // another process of this clone took it meanwhile
		}
		return c, err
	}
	return nil, errLeaseMoved
}

// Lease runs one lease operation (heartbeat, complete, release, block,
// fail) through the remote: fetch and fold the remote, do it locally with
// its event pushed first to the card's lease ref (expecting the tip the
// fetch saw), and only once that push landed appended locally. A push that
// lost to another write on the card leaves nothing behind and starts
// another round, which may then find the lease gone (ledger.ErrFenced).
// A retry of an operation this clone already recorded answers as the
// first did, after pushing it if the remote lacks it. do gets the request
// id to stamp the event with, and the context to write with: the write is
// staged through it (ledger.Backlog.Stage), so a write made with another
// context would be appended before the remote saw it.
func (s *Syncer) Lease(ctx context.Context, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, Result, error) {
	release, err := s.holdRequest(ctx, requestID)
	if err != nil {
		return ledger.Card{}, s.result(), err
	}
	defer release()
	rid := attemptID(requestID, 1)
	var out ledger.Card
	res, landed, err := s.leaseRounds(ctx, rid, true, func(ctx context.Context) (string, error) {
		c, err := do(ctx, rid)
		if err == nil {
			err = s.renamedError(c.ID)
		}
		out = c
		return c.ID, err
	})
	if landed != nil {
		out = *landed
	}
	return out, res, err
}

// leaseRounds runs write, a lease write stamped with request id rid,
// until it lands or is refused. Each round fetches and folds the remote,
// then stages the write under the backlog lock (built and checked, not
// appended), pushes it to its card's lease ref with the lock released, and
// appends it once that push landed (landStaged). With fast, a write that
// ends a lease is first tried without a fetch (fastLease). write returns the card it
// wrote on, "" when there was nothing to write; a write that landed
// returns the card as it stands after it. A replay of a request this
// clone recorded before stages nothing and is made sure of (ensure).
func (s *Syncer) leaseRounds(ctx context.Context, rid string, fast bool, write func(ctx context.Context) (string, error)) (Result, *ledger.Card, error) {
	res := s.result()
	s.fastRetry = false
	if fast {
		// First without a fetch, where this clone wrote the card's lease
		// ref last (leasefast.go).
		if done, c, err := s.fastLease(ctx, &res, rid, write); done {
			return res, c, err
		}
	}
	tries := s.o.Tries
	if !s.triesSet {
		tries = LeaseTries
	}
	for round := 1; round <= tries; round++ {
		res.Tries, s.round = round, round
		if round > 1 {
			if err := sleep(ctx, leaseBackoff(round-1)); err != nil {
				return res, nil, err
			}
		}
		remote, up, upLoad, err := s.pullOnce(ctx, &res)
		if errors.Is(err, ledger.ErrLockTimeout) && round < tries {
			continue // another process of this clone holds the backlog
		}
		if err != nil {
			return res, nil, err
		}
		// A write commits to the branch at the end: find out first
		// whether it could, so a diverged branch leaves nothing behind.
		if err := s.mergeable(remote); err != nil {
			return res, nil, err
		}
		var card string
		staged, err := s.b.Stage(ctx, s.checkLease, func(ctx context.Context) error {
			card, err = write(ctx)
			return err
		})
		// Lost to another clone's write on the card, or the backlog lock
		// stayed with another process of this clone: nothing was written,
		// so fetch and try again.
		if errors.Is(err, errLeaseMoved) || (errors.Is(err, ledger.ErrLockTimeout) && round < tries) {
			continue
		}
		if err != nil {
			return res, nil, err
		}
		if staged != nil && s.fastRetry && carriesLeases(staged.Events[0].Op) && !s.lv.tips[staged.Events[0].Card].IsZero() && !s.noAtomic {
			// The push without a fetch found the branch moved: the lease
			// ref and the branch once more as one push, now on what was
			// fetched (leasefast.go).
			s.fastRetry = false
			local, lerr := s.g.refHash(s.branch)
			cur, cerr := s.g.currentBranch()
			if lerr == nil {
				done, c, moved, err := s.atomicLand(ctx, &res, rid, staged, remote, local, cerr == nil && cur == s.branch, true)
				if done {
					return res, c, err
				}
				if moved {
					continue
				}
			}
		}
		if staged != nil {
			// Published with the backlog lock released: no other process
			// of this clone waits on the network.
			carried := s.stageCarried(ctx, staged)
			landed, err := s.pushLease(ctx, staged, carried)
			if errors.Is(err, errLeaseMoved) {
				continue
			} else if err != nil {
				return res, nil, err
			}
			res.Pushed = true
			res.Carried = len(landed)
			c, err := s.landStaged(ctx, &res, rid, staged)
			s.appendCarried(ctx, landed)
			if err != nil {
				return res, nil, err
			}
			if carriesLeases(staged.Events[0].Op) || len(s.lv.lines[staged.Events[0].Card]) >= leaseLinesCarried {
				s.carry(ctx, &res, remote, staged.Events[0].ID)
				s.noteApplied()
			} else {
				s.carryOwn(ctx, &res, remote, up)
				s.noteApplied()
				// A complete that went out without a fetch (leasefast.go)
				// retires nothing: the refs its branch push settled are
				// retired here, by the next write that fetched them.
				s.retire(ctx, true)
			}
			return res, &c, nil
		}
		if card == "" {
			s.carry(ctx, &res, remote, "")
			return res, nil, nil
		}
		// A replay of what this clone recorded before: make sure the
		// remote has it.
		res, err = s.ensure(ctx, res, rid, remote, up, upLoad)
		return res, nil, err
	}
	return res, nil, &RemoteError{Remote: s.o.Remote, Op: "push", Err: fmt.Errorf("other clones' writes on the card kept landing first (%d tries); try again", tries)}
}

// landStaged appends a write its lease ref now holds. When this clone's
// backlog moved meanwhile (another process appended after the write's
// stamp, or took the card locally), the write cannot be appended in place:
// a pull then brings it in from the lease ref in order, as it brings any
// other clone's, and the fold decides. The write is acknowledged only if
// the fold applied it.
func (s *Syncer) landStaged(ctx context.Context, res *Result, rid string, w *ledger.Staged) (ledger.Card, error) {
	// The remote holds the write now: a wait for the backlog lock that
	// runs out (another process of this clone holds it) is waited out
	// again rather than reported as a write that wrote nothing.
	var cards []ledger.Card
	err := outwaitLock(func() (err error) {
		cards, err = s.b.AppendStaged(ctx, w)
		return err
	})
	if err == nil {
		return cards[0], nil
	}
	if !errors.Is(err, ledger.ErrStageMoved) {
		return ledger.Card{}, s.landFailed(w, err)
	}
	if err := outwaitLock(func() error { _, _, _, err := s.pullOnce(ctx, res); return err }); err != nil {
		return ledger.Card{}, s.landFailed(w, err)
	}
	var c ledger.Card
	err = s.b.View(func(st *ledger.State, _ time.Time) error {
		if rc, ok := st.Receipt(rid); ok && rc.Event == w.Events[0].ID {
			c, _ = st.Card(rc.Card)
			return nil
		}
		if cf, ok := st.ConflictOf(w.Events[0].ID); ok {
			return ledger.Errorf(ledger.ErrConflict, "%s of %s was refused: %s", w.Events[0].Op, w.Events[0].Card, cf.Reason)
		}
		return ledger.Errorf(ledger.ErrConflict, "%s of %s reached the remote but this backlog moved meanwhile; run bl sync and look", w.Events[0].Op, w.Events[0].Card)
	})
	if err != nil {
		return c, err
	}
	// Folded: AppendStaged answers it as it stands, and closes the epics a
	// completion finished, as an append in place does.
	if cards, err := s.b.AppendStaged(ctx, w); err == nil && len(cards) > 0 {
		c = cards[0]
	}
	return c, nil
}

// outwaitLock runs fn again while it fails only because the backlog lock
// stayed with another process of this clone, DefaultTries times at most.
func outwaitLock(fn func() error) error {
	err := fn()
	for round := 1; errors.Is(err, ledger.ErrLockTimeout) && round < DefaultTries; round++ {
		err = fn()
	}
	return err
}

// landFailed is the error of a write its lease ref holds that this clone
// could not take in: it stands on the remote all the same.
func (s *Syncer) landFailed(w *ledger.Staged, err error) error {
	e := w.Events[0]
	return fmt.Errorf("%s of %s reached the remote, but this backlog could not take it in (run bl sync; a retry with request id %q answers as it stands): %w", e.Op, e.Card, e.RequestID, err)
}

func (s *Syncer) receipt(rid string) (rc ledger.Receipt, ok bool) {
	_ = s.b.View(func(st *ledger.State, _ time.Time) error {
		rc, ok = st.Receipt(rid)
		return nil
	})
	return rc, ok
}

// ensure pushes the event of the recorded request rid unless the remote
// (up, as fetched with its lease refs) holds it already; if the remote's
// history voided it meanwhile, it fails and nothing is acknowledged.
func (s *Syncer) ensure(ctx context.Context, res Result, rid string, remote plumbing.Hash, up ledger.Tree, upLoad ledger.Loader) (Result, error) {
	rc, ok := s.receipt(rid)
	if !ok {
		return res, nil
	}
	if len(up) > 0 {
		if st, err := up.FoldWith(upLoad); err == nil {
			if got, ok := st.Receipt(rid); ok && got.Event == rc.Event {
				res.Pushed = true
				s.carry(ctx, &res, remote, "")
				return res, nil
			}
		}
	}
	check := func(st *ledger.State) error {
		if got, ok := st.Receipt(rid); ok && got.Event == rc.Event {
			return nil
		}
		if cf, ok := st.ConflictOf(rc.Event); ok {
			return ledger.Errorf(ledger.ErrFenced, "%s of %s reached the remote too late: %s", rc.Op, rc.Card, cf.Reason)
		}
		return ErrRetry
	}
	r, err := s.exchange(ctx, Hooks{Check: check}, DefaultTries)
	r.Tries += res.Tries
	return r, err
}

// carriesLeases reports whether a lease write of op carries to the branch
// what only lease refs hold. A claim or a heartbeat does not: they are
// most of the remote writes, and the lease refs already hold them for
// every bl that fetches, so the branch takes them in with the card's next
// complete, release, block or fail (or the next sync) rather than every
// claimer contending on the branch at once; but see leaseLinesCarried.
func carriesLeases(op ledger.Op) bool {
	return op != ledger.OpClaim && op != ledger.OpHeartbeat
}

// leaseLinesCarried bounds a lease ref's tip: a claim or heartbeat that
// leaves it holding this many lines carries to the branch after all, so
// that the next lease write on the card leaves them out.
const leaseLinesCarried = 16

// carryOwn carries only this clone's own events no push carried yet (a
// write made with --local, a note): the branch is the only place they can
// reach the remote. A remote branch without a backlog (up, as fetched,
// is empty) lacks every event this clone holds. Otherwise the backlog is
// committed to the local branch alone, as a pull commits it: the work
// tree stays clean, so a plain git pull that follows is not refused over
// the backlog's uncommitted changes.
func (s *Syncer) carryOwn(ctx context.Context, res *Result, remote plumbing.Hash, up ledger.Tree) {
	if res.Rebased > 0 || remote.IsZero() || len(up) == 0 {
		s.carry(ctx, res, remote, "")
		return
	}
	head, committed, msg, err := s.commit(func() (backlogFiles, error) { return s.treeForCommit(ctx, nil) }, remote)
	if err != nil {
		return // the write landed; the next sync commits it
	}
	if committed {
		res.Committed, res.Message = true, msg
	}
	res.Commit = hashString(head)
}

// carryTries bounds the rounds carry spends getting the branch to hold
// this call's own event.
const carryTries = 5

// carry commits to the branch and pushes what this clone holds that the
// remote's branch lacks: its own events no push carried yet, and the
// events only lease refs hold. It stops once the branch holds mine (the
// event of this call, "" for none) and this clone has nothing else to
// push, or after carryTries rounds: the lease refs hold every lease event
// meanwhile, and the next exchange from any clone carries them. It reports
// nothing; the call it ends has already landed.
func (s *Syncer) carry(ctx context.Context, res *Result, remote plumbing.Hash, mine string) {
	if s.carryRounds(ctx, res, remote, mine) {
		s.retire(ctx, false) // the branch holds what this clone holds (retire.go)
	}
}

// carryRounds is carry; it reports whether it left the branch holding
// everything this clone holds.
func (s *Syncer) carryRounds(ctx context.Context, res *Result, remote plumbing.Hash, mine string) bool {
	for round := 1; round <= carryTries; round++ {
		if round > 1 {
			if sleep(ctx, backoff(round-1)) != nil {
				return false
			}
			var err error
			if remote, _, _, err = s.pullOnce(ctx, res); err != nil {
				return false
			}
			if !remote.IsZero() && (mine == "" || s.lv.inBranch[mine]) && res.Rebased == 0 {
				return s.lv.pending == 0
			}
		}
		// No branch on the remote yet: this push makes it.
		if !remote.IsZero() && res.Rebased == 0 && s.lv.pending == 0 {
			return true
		}
		head, committed, msg, err := s.commit(func() (backlogFiles, error) { return s.treeForCommit(ctx, nil) }, remote)
		if err != nil {
			return false
		}
		if committed {
			res.Committed, res.Message = true, msg
		}
		res.Commit = hashString(head)
		if head == remote {
			return true
		}
		err = s.push(ctx, head, remote)
		if err == nil {
			if s.remoteName != "" {
				_ = s.g.setRef(s.trackingRef(), head)
			}
			s.applied = head // built from the backlog, which holds remote
			return true
		}
		if !rejected(err) {
			return false
		}
	}
	return false
}

// leaseBackoff is the pause before lease round n+1: short, since a lost
// lease push means only that one card changed and the next round most
// likely picks another.
func leaseBackoff(n int) time.Duration {
	return jitter(min(5*time.Millisecond<<min(n, 6), 200*time.Millisecond))
}

// attemptID is the request id of the n-th attempt: the caller's id (or a
// fresh one) for the first, with a suffix for later ones.
func attemptID(base string, n int) string {
	if base == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		return "bl-" + hex.EncodeToString(b[:])
	}
	if n == 1 {
		return base
	}
	return fmt.Sprintf("%s~%d", base, n)
}
