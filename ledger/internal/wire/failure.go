package wire

import (
	"fmt"
	"time"
)

// Failure is why a card's last attempt failed, kept on the card so the next
// worker learns it without reading the log: a fail's reason, or a lease
// that ran out.
type Failure struct {
	Reason string    `json:"reason"`
	Owner  string    `json:"owner,omitempty"`
	Epoch  int64     `json:"epoch"`
	At     time.Time `json:"at"`
}

// RecordFailure keeps why the attempt of the lease the card holds failed.
// Call it before the lease is cleared.
func RecordFailure(c *Card, reason, owner string, at time.Time) {
	if owner == "" {
		owner = c.ClaimOwner
	}
	c.LastFailure = &Failure{Reason: reason, Owner: owner, Epoch: c.ClaimEpoch, At: at}
}

// closer is who finished a card by e: the lease owner it names, else the
// actor.
func Closer(e *Event) string {
	if e.Owner != "" {
		return e.Owner
	}
	return e.Actor
}

// lapsed reports whether the card's lease ran out at now with its attempts
// used up: nobody may claim it again, so every reader shows it blocked the
// moment the lease ends, with no reclaim needed (see view).
func (c *Card) Lapsed(now time.Time) bool {
	return c.Exhausted() && c.Expired(now)
}

// view is the card as readers show it at now. The fold stores the events'
// outcome; a lease that ran out with the attempts used up changes nothing
// stored until someone reclaims it, yet the card is blocked from that
// moment: view shows it so (status blocked, the lease gone, the reason and
// last_failure saying why), whatever reads it.
func (c *Card) View(now time.Time) {
	if !c.Lapsed(now) {
		return
	}
	at := now
	if c.LeaseExpiresAt != nil {
		at = *c.LeaseExpiresAt
	}
	RecordFailure(c, "lease expired", c.ClaimOwner, at)
	c.ClearLease()
	c.Status = StatusBlocked
	c.BlockedReason = fmt.Sprintf("max attempts reached (%d of %d): lease expired", c.Attempts, c.MaxAttempts)
}

func OrTime(t *time.Time, def time.Time) *time.Time {
	if t == nil {
		return &def
	}
	return t
}
