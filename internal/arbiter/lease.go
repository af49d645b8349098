package arbiter

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Claim claims a card through the arbiter: req.ID, or the best claimable
// card as this clone's fold sees it — after a lost round, one at random
// among the best of that priority, so clones racing at once spread out.
// The card is returned once the arbiter took the claim and the clone's
// ledger holds it; nil when nothing is claimable.
func (a *Arbiter) Claim(ctx context.Context, b *ledger.Backlog, req ledger.ClaimRequest) (card *ledger.Card, err error) {
	return a.claim(ctx, b, req, false)
}

// claim is Claim; following: a watch of every key runs and has taken the
// bucket in, so an empty pick needs no read of every record.
func (a *Arbiter) claim(ctx context.Context, b *ledger.Backlog, req ledger.ClaimRequest, following bool) (card *ledger.Card, err error) {
	req.Arbitrated = true
	rid := req.RequestID
	if rid == "" {
		rid = freshID()
	}
	req.RequestID = rid
	defer a.oneAtATime(rid)()
	defer func() {
		// Kept only while a write may have landed unanswered.
		var ue *UnreachableError
		if !(errors.As(err, &ue) && ue.Unsure) && ctx.Err() == nil {
			dropPending(b, rid)
		}
	}()
	// A retry of a call that died after its write may have landed: that
	// write is on the card the first attempt noted, so read that card
	// first, and the request's receipt answers.
	if card := pendingCard(b, rid); card != "" {
		e, err := a.get(ctx, card)
		if err != nil {
			return nil, err
		}
		if err := absorb(ctx, b, e); err != nil {
			return nil, err
		}
	}
	if rc, ok := receipt(b, rid); ok {
		// A retry: answer as the first call did, once the arbiter holds it.
		c, werr := a.write(ctx, b, rc.Card, rid, func(ctx context.Context) (ledger.Card, error) { return claimCard(ctx, b, req) })
		return &c, werr
	}
	// Rounds bounds the rounds lost to other writes; a round that finds
	// its card taken (this clone did not know yet) teaches the fold one
	// card, and is bounded by the backlog's size.
	lost := 0
	// Nothing claimable in this clone's fold may be a fold that missed a
	// release, a fail or a completion made elsewhere (the KV watch sees
	// only what happens while it runs): once per call, every record the
	// arbiter holds is taken in and the pick made again.
	readAll := following
	emptyPick := func() (again bool, err error) {
		if readAll {
			return false, nil
		}
		readAll = true
		return true, a.absorbAll(ctx, b)
	}
	for round := 1; lost < a.Rounds && round <= 16*a.Rounds; round++ {
		if lost > 0 {
			if err := pause(ctx, lost+1); err != nil {
				return nil, err
			}
		}
		id := req.ID
		if id == "" {
			spread := 1
			if lost > 0 {
				spread = 16
			}
			if round > 1 {
				// Another clone came first: read what the arbiter holds on
				// the cards to pick among, which this clone may not have
				// synced, rather than lose a round on each.
				cands, err := a.pick(b, req, refreshCards)
				if err == nil && len(cands) == 0 {
					if again, err := emptyPick(); again && err == nil {
						continue
					} else if err != nil {
						return nil, err
					}
				}
				if err != nil || len(cands) == 0 {
					return nil, err
				}
				if err := a.refresh(ctx, b, cands); err != nil {
					return nil, err
				}
			}
			top, err := a.pick(b, req, spread)
			if err == nil && len(top) == 0 {
				if again, err := emptyPick(); again && err == nil {
					continue
				} else if err != nil {
					return nil, err
				}
			}
			if err != nil || len(top) == 0 {
				return nil, err
			}
			n := 1
			for n < len(top) && top[n].Priority == top[0].Priority {
				n++
			}
			id = top[mrand.N(n)].ID
		}
		r := req
		r.ID = id
		notePending(b, rid, id)
		unmark := a.mark(id)
		c, err := a.write(ctx, b, id, rid, func(ctx context.Context) (ledger.Card, error) { return claimCard(ctx, b, r) })
		unmark()
		switch {
		case err == nil:
			return &c, nil
		case errors.Is(err, errLost):
			lost++
			continue
		case req.ID == "" && (errors.Is(err, ledger.ErrConflict) || errors.Is(err, ledger.ErrNotFound)):
			// The arbiter's record of the card says it is taken: this
			// clone's fold knows it now, and picks another at once (no
			// race on a key to wait out).
			continue
		}
		return nil, err
	}
	return nil, fmt.Errorf("arbiter %s: other clones' claims kept landing first (%d rounds); try again", a.url, a.Rounds)
}

// refreshCards is how many of the best claimable cards a claim reads from
// the arbiter before it picks.
const refreshCards = 16

// refresh reads the keys of cards at once and takes what they hold into b
// in one append: a claim learns the other clones' claims on the cards it
// picks among in one round trip, rather than lose a round on each.
func (a *Arbiter) refresh(ctx context.Context, b *ledger.Backlog, cards []ledger.Card) error {
	got := make([]entry, len(cards))
	errs := make([]error, len(cards))
	var wg sync.WaitGroup
	for i, c := range cards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = a.get(ctx, c.ID)
		}()
	}
	wg.Wait()
	var all []byte
	for i, e := range got {
		if errs[i] != nil {
			return errs[i]
		}
		if err := checkLines(e); err != nil {
			return err
		}
		all = append(all, e.lines...)
		if len(all) > 0 && all[len(all)-1] != '\n' {
			all = append(all, '\n')
		}
	}
	if len(all) == 0 {
		return nil
	}
	_, err := b.Absorb(ctx, all)
	return err
}

// pick is the best claimable cards as this clone's fold sees them, the
// first spread of them, past the cards other calls of this process are
// claiming (the calls of one bl daemon or bl run share this Arbiter): two
// calls of one clone would otherwise race for one card. When those are all
// there is, they are raced for.
func (a *Arbiter) pick(b *ledger.Backlog, req ledger.ClaimRequest, spread int) ([]ledger.Card, error) {
	a.mu.Lock()
	busy := maps.Clone(a.busy)
	a.mu.Unlock()
	var top []ledger.Card
	if err := b.View(func(st *ledger.State, now time.Time) error {
		top = st.PickTop(req.Filter(), now, spread+len(busy))
		return nil
	}); err != nil {
		return nil, err
	}
	free := slices.DeleteFunc(slices.Clone(top), func(c ledger.Card) bool { return busy[c.ID] > 0 })
	if len(free) == 0 {
		return top[:min(spread, len(top))], nil
	}
	return free[:min(spread, len(free))], nil
}

// oneAtATime makes the calls of this process with one request id run one
// after the other: a retry of a call whose caller was killed (the call
// runs on in bl daemon) then finds the first call's receipt and answers as
// it did, rather than race it to a second card.
func (a *Arbiter) oneAtATime(rid string) (done func()) {
	for {
		a.mu.Lock()
		ch, busy := a.requests[rid]
		if !busy {
			if a.requests == nil {
				a.requests = map[string]chan struct{}{}
			}
			ch = make(chan struct{})
			a.requests[rid] = ch
			a.mu.Unlock()
			return func() {
				a.mu.Lock()
				delete(a.requests, rid)
				a.mu.Unlock()
				close(ch)
			}
		}
		a.mu.Unlock()
		<-ch
	}
}

// mark notes that a call of this process is claiming card, until the
// returned func is called.
func (a *Arbiter) mark(card string) func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy == nil {
		a.busy = map[string]int{}
	}
	a.busy[card]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.busy[card]--; a.busy[card] <= 0 {
			delete(a.busy, card)
		}
	}
}

// ClaimReview takes a review lease through the arbiter (bl claim
// --review): req.ID, or the card in review this clone's fold would give.
func (a *Arbiter) ClaimReview(ctx context.Context, b *ledger.Backlog, req ledger.ClaimRequest) (*ledger.Card, error) {
	req.Arbitrated = true
	if req.RequestID == "" {
		req.RequestID = freshID()
	}
	defer a.oneAtATime(req.RequestID)()
	review := func(r ledger.ClaimRequest) func(context.Context) (ledger.Card, error) {
		return func(ctx context.Context) (ledger.Card, error) {
			c, err := b.ClaimReview(ctx, r)
			if err == nil && c == nil {
				return ledger.Card{}, ledger.Errorf(ledger.ErrConflict, "card %s is not waiting for review", r.ID)
			}
			if c == nil {
				return ledger.Card{}, err
			}
			return *c, err
		}
	}
	for round := 1; round <= a.Rounds; round++ {
		if round > 1 {
			if err := pause(ctx, round); err != nil {
				return nil, err
			}
		}
		id := req.ID
		if id == "" {
			if err := a.absorbAll(ctx, b); err != nil {
				return nil, err
			}
			// The card this clone would take: staged to learn it, never
			// appended.
			var picked *ledger.Card
			staged, err := b.Stage(ctx, stageAll, func(ctx context.Context) error {
				var err error
				picked, err = b.ClaimReview(ctx, req)
				return err
			})
			switch {
			case err != nil:
				return nil, err
			case staged != nil:
				id = staged.Events[0].Card
			case picked != nil:
				id = picked.ID // a replay of this request
			default:
				return nil, nil
			}
		}
		r := req
		r.ID = id
		c, err := a.write(ctx, b, id, req.RequestID, review(r))
		switch {
		case err == nil:
			return &c, nil
		case errors.Is(err, errLost), req.ID == "" && errors.Is(err, ledger.ErrConflict):
			continue
		}
		return nil, err
	}
	return nil, fmt.Errorf("arbiter %s: other clones' writes kept landing first (%d rounds); try again", a.url, a.Rounds)
}

// pendingFile holds, per request id, the card a claim through the arbiter
// is writing (local, in the ignored cache): a retry after the process died
// between the compare-and-swap and its answer finds the write there.
func pendingFile(b *ledger.Backlog, rid string) string {
	return filepath.Join(b.Dir(), filepath.FromSlash(pendingName(rid)))
}

// pendingName is rid's pending file relative to the backlog.
func pendingName(rid string) string {
	sum := sha256.Sum256([]byte(rid))
	return ledger.CacheDir + "/arbiter/" + hex.EncodeToString(sum[:16])
}

func pendingCard(b *ledger.Backlog, rid string) string {
	data, err := os.ReadFile(pendingFile(b, rid))
	if err != nil {
		return ""
	}
	rest, card, ok := strings.Cut(string(data), "\n")
	if !ok || rest != rid {
		return ""
	}
	return strings.TrimSuffix(card, "\n")
}

func notePending(b *ledger.Backlog, rid, card string) {
	path := pendingFile(b, rid)
	if ledger.CheckLocalPath(b.Dir(), pendingName(rid)) != nil || os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	// Made anew, never written through what is there: the clone's files
	// can put a link at a path a guessable request id gives.
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(rid + "\n" + card + "\n")
	_ = f.Close()
}

func dropPending(b *ledger.Backlog, rid string) {
	if ledger.CheckLocalPath(b.Dir(), pendingName(rid)) == nil { // never removed through a link
		_ = os.Remove(pendingFile(b, rid))
	}
}

func claimCard(ctx context.Context, b *ledger.Backlog, r ledger.ClaimRequest) (ledger.Card, error) {
	c, err := b.Claim(ctx, r)
	if err == nil && c == nil {
		return ledger.Card{}, ledger.Errorf(ledger.ErrConflict, "card %s is not claimable", r.ID)
	}
	if c == nil {
		return ledger.Card{}, err
	}
	return *c, err
}

// Lease runs a heartbeat, release, completion, block or fail of card
// through the arbiter. do makes the write with the context it is given
// (the write is staged through it), stamped with the request id it is
// given.
func (a *Arbiter) Lease(ctx context.Context, b *ledger.Backlog, card, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, error) {
	rid := requestID
	if rid == "" {
		rid = freshID()
	}
	defer a.oneAtATime(rid)()
	for round := 1; round <= a.Rounds; round++ {
		if round > 1 {
			if err := pause(ctx, round); err != nil {
				return ledger.Card{}, err
			}
		}
		c, err := a.write(ctx, b, card, rid, func(ctx context.Context) (ledger.Card, error) { return do(ctx, rid) })
		if errors.Is(err, errLost) {
			continue
		}
		return c, err
	}
	return ledger.Card{}, fmt.Errorf("arbiter %s: other writes on %s kept landing first (%d rounds); try again", a.url, card, a.Rounds)
}

// write is one round of a write on card: read the card's key, take in
// what it holds, stage the write against that fold (under the backlog
// lock, not appended), compare-and-swap it onto the key (the lock
// released), then append it. errLost: the key moved meanwhile, nothing
// was written anywhere, unless a lost answer hid that it landed (then the
// next read finds it, and the request's receipt answers).
func (a *Arbiter) write(ctx context.Context, b *ledger.Backlog, card, rid string, do func(ctx context.Context) (ledger.Card, error)) (ledger.Card, error) {
	e, err := a.get(ctx, card)
	if err != nil {
		return ledger.Card{}, err
	}
	if err := absorb(ctx, b, e); err != nil {
		return ledger.Card{}, err
	}
	var out ledger.Card
	staged, err := b.Stage(ctx, stageAll, func(ctx context.Context) error {
		var err error
		out, err = do(ctx)
		return err
	})
	if err != nil {
		return ledger.Card{}, err
	}
	if staged == nil {
		// A replay: the request is recorded here. It counts only if the
		// arbiter holds it.
		rc, _ := receipt(b, rid)
		if rc.Event != "" && !containsID(e.lines, rc.Event) {
			return ledger.Card{}, ledger.Errorf(ledger.ErrConflict, "request %q was recorded in this clone without the arbiter (a --local write?); it is not acknowledged by %s", rid, a.url)
		}
		return out, nil
	}
	for _, ev := range staged.Events {
		if ev.Card != card {
			return ledger.Card{}, errLost // the write chose another card since: decide again
		}
	}
	if err := a.cas(ctx, e, staged.Lines); err != nil {
		if errors.Is(err, errLost) {
			// Take in the write that came first: the next round's pick
			// sees it, and a write of ours whose answer was lost is found.
			if e2, gerr := a.get(ctx, card); gerr == nil && absorb(ctx, b, e2) == nil {
				if rc, ok := receipt(b, rid); ok && rc.Event == staged.Events[0].ID {
					c, _ := b.Get(card)
					return c, nil
				}
			}
		}
		return ledger.Card{}, err
	}
	return land(ctx, b, e, staged, card, rid)
}

// stageAll stages every write: the fold under the lock is its check.
func stageAll(*ledger.State, *ledger.Staged) error { return nil }

// land appends a write the arbiter holds. When the backlog moved since it
// was staged (another process of this clone appended after its stamp), it
// is taken in as the arbiter's line instead, and counts as the fold
// decides.
func land(ctx context.Context, b *ledger.Backlog, e entry, w *ledger.Staged, card, rid string) (ledger.Card, error) {
	cards, err := outwait(func() ([]ledger.Card, error) { return b.AppendStaged(ctx, w) })
	if err == nil {
		return cards[0], nil
	}
	if !errors.Is(err, ledger.ErrStageMoved) {
		return ledger.Card{}, landFailed(w, err)
	}
	e.lines = append(append([]byte(nil), e.lines...), w.Lines...)
	if _, err := outwait(func() ([]ledger.Card, error) { return nil, absorb(ctx, b, e) }); err != nil {
		return ledger.Card{}, landFailed(w, err)
	}
	if rc, ok := receipt(b, rid); ok && rc.Event == w.Events[0].ID {
		if cards, err := b.AppendStaged(ctx, w); err == nil && len(cards) > 0 {
			return cards[0], nil // answered as it stands; a completion closes its epics
		}
		return b.Get(card)
	}
	var reason string
	_ = b.View(func(st *ledger.State, _ time.Time) error {
		if cf, ok := st.ConflictOf(w.Events[0].ID); ok {
			reason = cf.Reason
		}
		return nil
	})
	return ledger.Card{}, ledger.Errorf(ledger.ErrConflict, "%s of %s reached the arbiter but this backlog folds it as refused: %s", w.Events[0].Op, card, reason)
}

// outwait runs fn again while the backlog lock stays with other processes
// of this clone: the arbiter holds the write already.
func outwait(fn func() ([]ledger.Card, error)) ([]ledger.Card, error) {
	cards, err := fn()
	for i := 0; errors.Is(err, ledger.ErrLockTimeout) && i < 10; i++ {
		cards, err = fn()
	}
	return cards, err
}

func landFailed(w *ledger.Staged, err error) error {
	e := w.Events[0]
	return fmt.Errorf("%s of %s reached the arbiter, but this backlog could not take it in (a retry with request id %q answers as it stands): %w", e.Op, e.Card, e.RequestID, err)
}

func receipt(b *ledger.Backlog, rid string) (rc ledger.Receipt, ok bool) {
	_ = b.View(func(st *ledger.State, _ time.Time) error {
		rc, ok = st.Receipt(rid)
		return nil
	})
	return rc, ok
}

// pause is the wait before round n: short and jittered, since a lost
// round means only that one card moved.
func pause(ctx context.Context, n int) error {
	d := min(2*time.Millisecond<<min(n, 6), 100*time.Millisecond)
	d = d/2 + time.Duration(mrand.Int64N(int64(d)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func freshID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "bl-" + hex.EncodeToString(b[:])
}
