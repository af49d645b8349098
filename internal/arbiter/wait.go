package arbiter

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bl-backlog/bl/ledger"
)

// recheck bounds how long a wait goes without looking at this clone's own
// backlog (cards created or unblocked here, or brought by a sync).
const recheck = time.Second

// ClaimWait claims through the arbiter, and when nothing is claimable
// waits up to wait for a card to become claimable: every key of the
// bucket is watched (a KV watch), its current values taken into this
// clone first — a release, fail or completion made elsewhere before the
// wait began counts — then every write the arbiter takes from any clone,
// each waking the wait at once; this clone's own backlog is looked at
// again at least every second. A nil card: the wait ran out.
func (a *Arbiter) ClaimWait(ctx context.Context, b *ledger.Backlog, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error) {
	deadline := time.Now().Add(wait)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The watch outlives the deadline: only the wait ends with it.
	w, err := a.kv.WatchAll(ctx)
	if err != nil {
		return nil, &UnreachableError{URL: a.url, Op: "watch", Err: err}
	}
	defer w.Stop()
	if err := a.takeCurrent(ctx, b, w); err != nil {
		return nil, err
	}
	for {
		c, err := a.claim(ctx, b, req, true)
		if err != nil || c != nil {
			return c, err
		}
		if err := a.waitUpdate(wctx, b, w); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return nil, nil
			}
			return nil, err
		}
	}
}

// waitUpdate waits for the next write the watch reports (taken into b),
// or recheck.
func (a *Arbiter) waitUpdate(ctx context.Context, b *ledger.Backlog, w jetstream.KeyWatcher) error {
	t := time.NewTimer(recheck)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	case u, ok := <-w.Updates():
		if !ok {
			return &UnreachableError{URL: a.url, Op: "watch", Err: errors.New("the watch ended")}
		}
		if u != nil && u.Operation() == jetstream.KeyValuePut {
			card := cardOfKey(u.Key())
			if card != "" {
				_ = absorb(ctx, b, entry{card: card, lines: u.Value(), rev: u.Revision()})
			}
		}
		return nil
	}
}

// Follow takes the bucket's current values into b, then every write the
// arbiter takes as it happens, until ctx ends: bl watch then shows other
// machines' decisions, those made before it started too, within a second.
// started, when not nil, gets nil once the current values are in, or the
// error that ended the start.
func (a *Arbiter) Follow(ctx context.Context, b *ledger.Backlog, started chan<- error) error {
	w, err := a.kv.WatchAll(ctx)
	if err != nil {
		err = &UnreachableError{URL: a.url, Op: "watch", Err: err}
	} else if err = a.takeCurrent(ctx, b, w); err != nil {
		w.Stop()
	}
	if started != nil {
		started <- err
	}
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil // ended with ctx: both were ready, select picked this one
				}
				return &UnreachableError{URL: a.url, Op: "watch", Err: errors.New("the watch ended")}
			}
			if u != nil && u.Operation() == jetstream.KeyValuePut {
				if card := cardOfKey(u.Key()); card != "" {
					_ = absorb(ctx, b, entry{card: card, lines: u.Value(), rev: u.Revision()})
				}
			}
		}
	}
}

// absorbAll takes every card's record into b: a review claim picks among
// the cards in review, which only the arbiter may know to be there.
func (a *Arbiter) absorbAll(ctx context.Context, b *ledger.Backlog) error {
	rctx, cancel := a.rctx(ctx)
	defer cancel()
	w, err := a.kv.WatchAll(rctx)
	if err != nil {
		return &UnreachableError{URL: a.url, Op: "read all", Err: err}
	}
	defer w.Stop()
	return a.takeCurrent(ctx, b, w)
}

// takeCurrent takes into b the current values a watch of every key (not
// UpdatesOnly) delivers before its end-of-current marker, passing over
// the records b already holds; it waits up to the request timeout.
func (a *Arbiter) takeCurrent(ctx context.Context, b *ledger.Backlog, w jetstream.KeyWatcher) error {
	rctx, cancel := a.rctx(ctx)
	defer cancel()
	for {
		select {
		case <-rctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &UnreachableError{URL: a.url, Op: "read all", Err: rctx.Err()}
		case u, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return &UnreachableError{URL: a.url, Op: "read all", Err: errors.New("the watch ended")}
			}
			if u == nil {
				return nil // the current values are all delivered
			}
			if u.Operation() != jetstream.KeyValuePut {
				continue
			}
			if card := cardOfKey(u.Key()); card != "" && !settled(b, card, u.Value()) {
				if err := absorb(ctx, b, entry{card: card, lines: u.Value(), rev: u.Revision()}); err != nil {
					return err
				}
			}
		}
	}
}

// settled reports whether this clone already holds everything a card's
// record can tell it: the card is done or deleted here at an epoch no line
// of the record passes. Whatever brought that state (a sync, or the record
// itself) brought the card's lease events before it, and after a
// completion the next lease event is a claim at a higher epoch. Reading
// every record of the bucket would otherwise take in again, at each call,
// old lines whose receipts the fold no longer keeps.
func settled(b *ledger.Backlog, card string, lines []byte) bool {
	c, err := b.Get(card)
	if err != nil || (c.Status != ledger.StatusDone && c.DeletedAt == nil) {
		return false
	}
	for rest := lines; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		e, err := ledger.DecodeLine(line)
		if err != nil || e.Epoch > c.ClaimEpoch {
			return false
		}
	}
	return true
}
