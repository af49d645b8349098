package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// The lease while the command runs: heartbeats renew it beside the wait,
// so that the command's exit, a signal and the lease's end are seen while
// a heartbeat waits on the arbiter. Once one fails, the lease's end is
// watched: the command is stopped before the lease runs out (renewals
// failing meanwhile), since then another worker may take the card.

// beatResult is a heartbeat's answer.
type beatResult struct {
	card ledger.Card
	err  error
}

// lostRun stops the command of a card whose lease is lost, or about to
// run out unrenewed: nothing of its run is recorded.
func (s *supervisor) lostRun(cmd *proc, res Result, card ledger.Card, start time.Time) Result {
	s.stop(cmd)
	if cur, gerr := s.o.Backlog.Get(card.ID); gerr == nil {
		res.Card = cur
	}
	res.Outcome, res.ExitCode, res.Took = Fenced, -1, time.Since(start)
	s.logf("%s: command stopped; nothing recorded", card.ID)
	return res
}

// leaseWatch renews a running command's lease.
type leaseWatch struct {
	s          *supervisor
	card       ledger.Card
	ttl, every time.Duration
	hb         ledger.HeartbeatRequest
	beat       *time.Ticker
	beats      chan beatResult // the heartbeat in flight answers here
	inFlight   bool
	hctx       context.Context
	stopBeats  context.CancelFunc
	expires    time.Time        // when the lease runs out, as last renewed
	lost       <-chan time.Time // set once a heartbeat failed: time to stop
	lastErr    error            // the last heartbeat's failure
}

func (s *supervisor) watchLease(ctx context.Context, card ledger.Card) *leaseWatch {
	ttl := time.Duration(card.ClaimTTLSeconds) * time.Second
	w := &leaseWatch{s: s, card: card, ttl: ttl, every: max(ttl/3, 100*time.Millisecond),
		hb:    ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: s.o.Actor}, ID: card.ID, Owner: card.ClaimOwner, Epoch: card.ClaimEpoch},
		beats: make(chan beatResult, 1), expires: time.Now().Add(ttl)}
	w.beat = time.NewTicker(w.every)
	w.hctx, w.stopBeats = context.WithCancel(ctx)
	if card.LeaseExpiresAt != nil {
		w.expires = *card.LeaseExpiresAt
	}
	return w
}

// close stops the heartbeats and waits for the one in flight, so that no
// renewal runs beside the outcome's write.
func (w *leaseWatch) close() {
	w.stopBeats()
	if w.inFlight {
		<-w.beats
		w.inFlight = false
	}
	w.beat.Stop()
}

// stopIn is how long the command may run on while no renewal lands: it
// is gone (SIGKILL at the latest) before the lease runs out.
func (w *leaseWatch) stopIn() time.Duration {
	return time.Until(w.expires) - w.s.o.Grace - min(w.ttl/10, 10*time.Second)
}

// send starts a heartbeat unless one is in flight. One unanswered for a
// whole beat (it waits on the arbiter or the backlog lock) is as good as
// failed: it sets the time to stop the command.
func (w *leaseWatch) send() {
	if w.inFlight {
		if w.lost == nil {
			w.lastErr = fmt.Errorf("no answer in %s", w.every)
			at := w.stopIn()
			w.lost = time.After(at)
			w.s.logf("heartbeat of %s has not answered in %s; unless one succeeds the command is stopped in %s, before the lease runs out at %s",
				w.card.ID, w.every, max(at, 0).Round(time.Millisecond), w.expires.Format(time.RFC3339))
		}
		return
	}
	w.inFlight = true
	go func() {
		c, err := w.s.o.Leases.Heartbeat(w.hctx, w.hb)
		w.beats <- beatResult{c, err}
	}()
}

// answer takes a heartbeat's answer and reports a fenced lease. A failure
// sets the time to stop the command and renews more often; a success
// after failures calls that off.
func (w *leaseWatch) answer(r beatResult, res *Result) (fenced bool) {
	w.inFlight = false
	s, card := w.s, w.card
	switch {
	case errors.Is(r.err, ledger.ErrFenced):
		s.logf("lost the lease on %s (%v): stopping the command (SIGTERM, then SIGKILL after %s)", card.ID, r.err, s.o.Grace)
		return true
	case r.err != nil:
		retry := min(max(w.ttl/10, 100*time.Millisecond), w.every)
		if w.lost == nil {
			at := w.stopIn()
			w.lost = time.After(at)
			s.logf("heartbeat of %s failed, trying again every %s; unless one succeeds the command is stopped in %s, before the lease runs out at %s: %v",
				card.ID, retry, max(at, 0).Round(time.Millisecond), w.expires.Format(time.RFC3339), r.err)
		}
		w.lastErr = r.err
		w.beat.Reset(retry)
	default:
		res.Card = r.card
		if r.card.LeaseExpiresAt != nil {
			w.expires = *r.card.LeaseExpiresAt
		}
		if w.lost != nil {
			s.logf("heartbeat of %s succeeded again", card.ID)
			w.lost = nil
			w.beat.Reset(w.every)
		}
	}
	return false
}

// wait waits for the command to end, renewing its lease, passing signals
// on and stopping it past Options.Timeout. lost says the lease is lost, or
// about to run out unrenewed: the caller stops the command (lostRun).
func (s *supervisor) wait(cmd *proc, w *leaseWatch, res *Result) (ex exitInfo, timedOut, lost bool) {
	var timeout <-chan time.Time
	if s.o.Timeout > 0 {
		t := time.NewTimer(s.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	card := w.card
	for {
		select {
		case ex = <-cmd.done:
			return ex, false, false
		case <-timeout:
			s.logf("%s: the command ran past --timeout %s: stopping it (SIGTERM, then SIGKILL after %s)", card.ID, s.o.Timeout, s.o.Grace)
			return s.stop(cmd), true, false
		case <-w.beat.C:
			w.send()
		case r := <-w.beats:
			if w.answer(r, res) {
				return ex, false, true
			}
		case <-w.lost:
			s.logf("could not renew the lease on %s, which runs out at %s (%v): stopping the command (SIGTERM, then SIGKILL after %s)",
				card.ID, w.expires.Format(time.RFC3339), w.lastErr, s.o.Grace)
			return ex, false, true
		case sig := <-s.o.Signals:
			res.Signal = sig
			s.logf("%s: passing %s on to the command", card.ID, sig)
			signalGroup(cmd.pid, sig)
		}
	}
}
