package store

import (
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// StampClock returns the clock reading an event stamped at by a writer
// whose clock reads now must carry: nil when the stamp is within
// MaxClockSkew of now. Otherwise the events before it are stamped ahead of
// this clock, and the writer warns once.
func (b *Store) StampClock(at, now time.Time) *time.Time {
	if at.Sub(now) <= wire.MaxClockSkew {
		return nil
	}
	last := b.state.Last()
	b.warnOnce("clock-skew", fmt.Sprintf(
		"events are stamped up to %s ahead of this machine's clock (%s): the newest stamp is %s (event %q, %s of %q by %q). "+
			"A machine with a fast clock wrote to this backlog, or this clock is behind; leases taken here are timed by this clock, not by the stamps (bl doctor lists the events)",
		FormatSkew(last.At.Sub(now)), now.Format(time.RFC3339), last.At.Format(time.RFC3339Nano), last.ID, last.Op, last.Card, last.Actor))
	return &now
}

// warnOnce passes msg to Options.Warn the first time key is seen by this
// handle.
func (b *Store) warnOnce(key, msg string) {
	key = "\x00" + key // never a message
	if b.opts.Warn == nil || b.warned[key] {
		return
	}
	b.warn(msg)
	b.warned[key] = true
}

// Restamp returns a copy of e stamped at instead, still carrying the time
// its writer read from its clock when the new stamp runs ahead of that by
// more than MaxClockSkew.
func Restamp(e *wire.Event, at time.Time) *wire.Event {
	cp := *e
	if c := e.WriterClock(); at.Sub(c) > wire.MaxClockSkew {
		cp.Clock = &c
	}
	cp.At = at
	return &cp
}

// FutureEvent is an event written by a clock ahead of the one checking it.
type FutureEvent struct {
	Event        string    `json:"event"`
	At           time.Time `json:"at"`
	Op           wire.Op   `json:"op"`
	Card         string    `json:"card"`
	Actor        string    `json:"actor"`
	AheadSeconds float64   `json:"ahead_seconds"`
}

// FutureEvents returns the events whose writer's clock read more than
// MaxClockSkew after now, and how far the newest stamp (newest is the last
// event folded, from the ledger or the snapshot) runs ahead of now, in
// seconds; 0 within MaxClockSkew. Events stamped ahead only to stay after
// such an event carry their writers' clocks and are not listed.
func FutureEvents(evs []*wire.Event, newest wire.Event, now time.Time) (future []FutureEvent, stampsAhead float64) {
	future = []FutureEvent{}
	for _, e := range evs {
		if ahead := e.WriterClock().Sub(now); ahead > wire.MaxClockSkew {
			future = append(future, FutureEvent{Event: e.ID, At: e.At, Op: e.Op, Card: e.Card, Actor: e.Actor, AheadSeconds: ahead.Round(time.Millisecond).Seconds()})
		}
	}
	if ahead := newest.At.Sub(now); ahead > wire.MaxClockSkew {
		stampsAhead = ahead.Round(time.Millisecond).Seconds()
	}
	return future, stampsAhead
}

// FormatSkew renders a distance between clocks to the second, or in days
// when it is that large.
func FormatSkew(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	}
	return d.Round(time.Second).String()
}
