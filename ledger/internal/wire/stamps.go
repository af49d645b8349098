package wire

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

// WriterClock is the time the event's writer read from its clock: the clock
// member when the event carries one (and it is not after the stamp, as a
// writer never writes it), else the stamp. Every time-based decision of the
// fold (claimable, expired, deferred) and every time it stores on a card
// uses it; ordering uses the stamp.
func (e *Event) WriterClock() time.Time {
	if e.Clock != nil && e.Clock.Before(e.At) {
		return *e.Clock
	}
	return e.At
}

// The stamps bl accepts: from MinStamp up to, not including, MaxStamp
// (years 2000 to 2200). An event stamped outside them, or carrying a clock
// reading outside them, is damage on read (ErrStampRange), and a writer
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

const MaxTTLSeconds = int64(MaxTTL / time.Second)

// ErrStampRange is the damage of a line stamped outside the accepted range.
var ErrStampRange = errors.New("stamp outside the range bl accepts")

// StampInRange reports whether t is within [MinStamp, MaxStamp).
func StampInRange(t time.Time) bool {
	u := t.Unix()
	return minStampUnix <= u && u < maxStampUnix
}

// checkStamps refuses an event whose stamp or clock reading lies outside
// the accepted range.
func checkStamps(e *Event) error {
	if !StampInRange(e.At) {
		return fmt.Errorf("%w: event %s is stamped %s; bl accepts %d-01-01 to %d-12-31 (a clock far off, or an edited line): bl doctor --repair sets the line aside",
			ErrStampRange, e.ID, e.At.Format(time.RFC3339Nano), MinStamp.Year(), MaxStamp.Year()-1)
	}
	if e.Clock != nil && !StampInRange(*e.Clock) {
		return fmt.Errorf("%w: event %s carries the clock reading %s; bl accepts %d-01-01 to %d-12-31 (a clock far off, or an edited line): bl doctor --repair sets the line aside",
			ErrStampRange, e.ID, e.Clock.Format(time.RFC3339Nano), MinStamp.Year(), MaxStamp.Year()-1)
	}
	return nil
}

// CheckSourceTime refuses a source time (bl import: when the tracker
// recorded it) that JSON cannot carry; nil and zero (clear) pass.
func CheckSourceTime(id string, t *time.Time) error {
	if t == nil || t.IsZero() {
		return nil
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return Rule(ErrInvalid, "a source time of %s is in year %d; it must be in 1 to 9999", id, y)
	}
	return nil
}
