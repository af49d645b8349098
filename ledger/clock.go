package ledger

import (
	"errors"
	"fmt"
	"time"
)

// MaxClockSkew is how far an event's stamp may run ahead of its writer's
// clock without the event saying so. A writer stamps max(now, previous+1ns)
// so stamps never go backwards; when that puts the stamp more than
// MaxClockSkew after its own clock (an earlier event came from a fast
// clock), the event also carries the writer's clock reading, and the fold
// takes every time it decides or stores from that reading. So a lease ends
// ttl after its claimer's clock said it began, give or take MaxClockSkew,
// whatever stamps came before it.
const MaxClockSkew = time.Second

// clock is the time the event's writer read from its clock: the clock
// member when the event carries one (and it is not after the stamp, as a
// writer never writes it), else the stamp. Every time-based decision of the
// fold (claimable, expired, deferred) and every time it stores on a card
// uses it; ordering uses the stamp.
func (e *Event) clock() time.Time {
	if e.Clock != nil && e.Clock.Before(e.At) {
		return *e.Clock
	}
	return e.At
}

// stampClock returns the clock reading an event stamped at by a writer
// whose clock reads now must carry: nil when the stamp is within
// MaxClockSkew of now. Otherwise the events before it are stamped ahead of
// this clock, and the writer warns once.
func (b *Backlog) stampClock(at, now time.Time) *time.Time {
	if at.Sub(now) <= MaxClockSkew {
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
func (b *Backlog) warnOnce(key, msg string) {
	key = "\x00" + key // never a message
	if b.opts.Warn == nil || b.warned[key] {
		return
	}
	b.warn(msg)
	b.warned[key] = true
}

// restamp returns a copy of e stamped at instead, still carrying the time
// its writer read from its clock when the new stamp runs ahead of that by
// more than MaxClockSkew.
func restamp(e *Event, at time.Time) *Event {
	cp := *e
	if c := e.clock(); at.Sub(c) > MaxClockSkew {
		cp.Clock = &c
	}
	cp.At = at
	return &cp
}

// FutureEvent is an event written by a clock ahead of the one checking it.
type FutureEvent struct {
	Event        string    `json:"event"`
	At           time.Time `json:"at"`
	Op           Op        `json:"op"`
	Card         string    `json:"card"`
	Actor        string    `json:"actor"`
	AheadSeconds float64   `json:"ahead_seconds"`
}

// futureEvents returns the events whose writer's clock read more than
// MaxClockSkew after now, and how far the newest stamp (newest is the last
// event folded, from the ledger or the snapshot) runs ahead of now, in
// seconds; 0 within MaxClockSkew. Events stamped ahead only to stay after
// such an event carry their writers' clocks and are not listed.
func futureEvents(evs []*Event, newest Event, now time.Time) (future []FutureEvent, stampsAhead float64) {
	future = []FutureEvent{}
	for _, e := range evs {
		if ahead := e.clock().Sub(now); ahead > MaxClockSkew {
			future = append(future, FutureEvent{Event: e.ID, At: e.At, Op: e.Op, Card: e.Card, Actor: e.Actor, AheadSeconds: ahead.Round(time.Millisecond).Seconds()})
		}
	}
	if ahead := newest.At.Sub(now); ahead > MaxClockSkew {
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

// The stamps bl accepts: from MinStamp up to, not including, MaxStamp
// (years 2000 to 2200). An event stamped outside them, or carrying a clock
// reading outside them, is damage on read (errStampRange), and a writer
// whose clock reads outside them refuses to write. Within them every time
// the fold computes (a stamp plus a lease of at most MaxTTL, plus a retry
// backoff of at most a century) encodes as RFC 3339, and every stamp's Unix
// nanoseconds (a cursor, the snapshot index's lease ends) fit an int64, so
// no arithmetic on times or cursors can overflow.
var (
	MinStamp = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxStamp = time.Date(2201, 1, 1, 0, 0, 0, 0, time.UTC)
)

// The bounds as Unix seconds, for a check that costs two comparisons.
var minStampUnix, maxStampUnix = MinStamp.Unix(), MaxStamp.Unix()

// MaxTTL is the longest lease: with a stamp before MaxStamp the lease ends
// before 2262, the last year whose Unix nanoseconds fit an int64.
const MaxTTL = 50 * 365 * 24 * time.Hour

const maxTTLSeconds = int64(MaxTTL / time.Second)

// errStampRange is the damage of a line stamped outside the accepted range.
var errStampRange = errors.New("stamp outside the range bl accepts")

// stampInRange reports whether t is within [MinStamp, MaxStamp).
func stampInRange(t time.Time) bool {
	u := t.Unix()
	return minStampUnix <= u && u < maxStampUnix
}

// checkStamps refuses an event whose stamp or clock reading lies outside
// the accepted range.
func checkStamps(e *Event) error {
	if !stampInRange(e.At) {
		return fmt.Errorf("%w: event %s is stamped %s; bl accepts %d-01-01 to %d-12-31 (a clock far off, or an edited line): bl doctor --repair sets the line aside",
			errStampRange, e.ID, e.At.Format(time.RFC3339Nano), MinStamp.Year(), MaxStamp.Year()-1)
	}
	if e.Clock != nil && !stampInRange(*e.Clock) {
		return fmt.Errorf("%w: event %s carries the clock reading %s; bl accepts %d-01-01 to %d-12-31 (a clock far off, or an edited line): bl doctor --repair sets the line aside",
			errStampRange, e.ID, e.Clock.Format(time.RFC3339Nano), MinStamp.Year(), MaxStamp.Year()-1)
	}
	return nil
}
