package gitsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Claim claims a card through the remote. Each round pulls (the remote's
// events first, ours rebased after them), claims locally on the first
// round or when the claim we hold was voided by what the pull brought in,
// commits and pushes. The card is returned only once a push carrying the
// claim succeeded and the fold of exactly what was pushed shows the claim
// applied: from then on every clone that syncs folds the remote's history
// first, so the claim stands. A nil card means nothing was claimable.
//
// When every round fails, the local claim is left as it is: a release
// could not be told apart from a winner with the same owner name at the
// same epoch. If the remote holds a rival claim, the next sync folds ours
// as a conflict; if not, the lease runs out after its TTL.
func (s *Syncer) Claim(ctx context.Context, req ledger.ClaimRequest) (*ledger.Card, Result, error) {
	var (
		card *ledger.Card // the claim in flight
		rid  string
		n    int
		won  *ledger.Card
	)
	prepare := func(ctx context.Context, round int) error {
		if card != nil {
			held := false
			err := s.b.View(func(st *ledger.State, _ time.Time) error {
				_, held = holds(st, card.ID, req.Owner, rid)
				return nil
			})
			if err != nil {
				return err
			}
			if held {
				return nil
			}
			card = nil // voided by an earlier claim from elsewhere: take the next card
		}
		n++
		rid = attemptID(req.RequestID, n)
		r := req
		r.RequestID = rid
		c, err := s.b.Claim(ctx, r)
		if err != nil {
			return err
		}
		if c == nil {
			return ErrStop
		}
		card = c
		return nil
	}
	check := func(st *ledger.State) error {
		if card == nil {
			return ErrRetry
		}
		c, ok := holds(st, card.ID, req.Owner, rid)
		if !ok {
			return ErrRetry
		}
		won = &c
		return nil
	}
	res, err := s.pushLease(ctx, Hooks{Prepare: prepare, Check: check})
	if err != nil {
		// The local claim stays as it is: releasing it could not be
		// fenced apart from a winner with the same owner name at the same
		// epoch. If the remote holds a rival claim, the next sync folds
		// ours as a conflict; if not, its lease runs out after its TTL.
		return nil, res, err
	}
	if card == nil {
		return nil, res, nil
	}
	return won, res, nil
}

// holds reports whether the claim made with request id rid is applied in
// st and the card is still claimed by owner at that claim's epoch.
func holds(st *ledger.State, id, owner, rid string) (ledger.Card, bool) {
	rc, ok := st.Receipt(rid)
	if !ok || rc.Op != ledger.OpClaim || rc.Card != id {
		return ledger.Card{}, false
	}
	c, ok := st.Card(id)
	if !ok || c.Status != ledger.StatusClaimed || c.ClaimOwner != owner || c.ClaimEpoch != rc.Epoch {
		return ledger.Card{}, false
	}
	return c, true
}

// Lease runs one lease operation (heartbeat, complete, release) through
// the remote: pull, do it locally, commit, push, and on a rejected push
// pull again. If what the pull brought in voided the operation — the card
// was claimed elsewhere meanwhile — it fails with ledger.ErrFenced (or
// ledger.ErrConflict when the card's owner is unchanged) and nothing is
// acknowledged. do gets the request id to stamp the event with.
func (s *Syncer) Lease(ctx context.Context, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, Result, error) {
	rid := attemptID(requestID, 1)
	var (
		done   bool
		before ledger.Card
		out    ledger.Card
	)
	voided := func(st *ledger.State) error {
		c, _ := st.Card(before.ID)
		if c.ClaimOwner != before.ClaimOwner || c.ClaimEpoch != before.ClaimEpoch {
			return ledger.Errorf(ledger.ErrFenced, "card %s was claimed by %s at epoch %d on the remote before this reached it; stop work on it",
				c.ID, c.ClaimOwner, c.ClaimEpoch)
		}
		return ledger.Errorf(ledger.ErrConflict, "card %s changed on the remote before this reached it (now %s)", c.ID, c.Status)
	}
	prepare := func(ctx context.Context, round int) error {
		if !done {
			c, err := do(ctx, rid)
			if err != nil {
				return err
			}
			done, before = true, c
			return nil
		}
		var err error
		if verr := s.b.View(func(st *ledger.State, _ time.Time) error {
			if _, ok := st.Receipt(rid); !ok {
				err = voided(st)
			}
			return nil
		}); verr != nil {
			return verr
		}
		return err
	}
	check := func(st *ledger.State) error {
		rc, ok := st.Receipt(rid)
		if !ok {
			return ErrRetry
		}
		out, _ = st.Card(rc.Card)
		return nil
	}
	res, err := s.pushLease(ctx, Hooks{Prepare: prepare, Check: check})
	return out, res, err
}

// pushLease pushes with LeaseTries rounds unless Options.Tries says
// otherwise.
func (s *Syncer) pushLease(ctx context.Context, h Hooks) (Result, error) {
	tries := s.o.Tries
	if !s.triesSet {
		tries = LeaseTries
	}
	return s.exchange(ctx, h, tries)
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
