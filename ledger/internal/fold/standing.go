package fold

import (
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Standing is where a card stands at a moment, derived from the state:
// what its status alone does not say. A ready card may be waiting (on
// dependencies not done, or a deferral), a claimed card's lease may have
// run out. Nothing here is stored; it is the fold read at now.
type Standing struct {
	// State is the status as it stands: ready (claimable now), waiting
	// (ready, but on dependencies or a deferral), claimed, expired
	// (claimed, lease run out: claimable), blocked or done.
	State string `json:"state"`
	// Claimable: anyone may claim the card now.
	Claimable bool `json:"claimable"`
	// WaitingOn lists the dependencies not done yet, in the card's order.
	WaitingOn []string `json:"waiting_on"`
	// LeaseExpired: claimed, and the lease has run out.
	LeaseExpired bool `json:"lease_expired"`
	// WaitingChildren: the open children an epic waits on (epics.go).
	WaitingChildren int `json:"waiting_children,omitempty"`
	// PathsHeldBy names the card holding paths that overlap this card's
	// (claimed or in review): a claim passes over this card meanwhile.
	PathsHeldBy string `json:"paths_held_by,omitempty"`
}

// The states of Standing.State.
const (
	StateReady   = "ready"
	StateWaiting = "waiting"
	StateClaimed = "claimed"
	StateExpired = "expired"
	StateBlocked = "blocked"
	StateDone    = "done"
	StateDeleted = "deleted"
	StateReview  = "review"
)

// Standing derives where c stands at now.
func (s *State) Standing(c *wire.Card, now time.Time) Standing {
	st := Standing{Claimable: s.Selectable(c, now, "") == nil, WaitingOn: []string{}}
	if c.Lapsed(now) { // blocked from the moment its lease ran out (Card.view)
		st.State = StateBlocked
		return st
	}
	if st.Claimable {
		if h := s.PathsHeldBy(c, now); h != nil {
			st.Claimable, st.PathsHeldBy = false, h.ID
		}
	}
	c.HoldingLinks(func(_, d string) bool {
		if dc := s.Find(d); (dc == nil || dc.Status != wire.StatusDone) && !slices.Contains(st.WaitingOn, d) {
			st.WaitingOn = append(st.WaitingOn, d)
		}
		return true
	})
	if !st.Claimable && s.epicWaits(c) != nil {
		st.WaitingChildren = c.OpenChildren
	}
	switch c.Status {
	case wire.StatusReady:
		st.State = StateReady
		if !st.Claimable {
			st.State = StateWaiting
		}
	case wire.StatusClaimed:
		st.State, st.LeaseExpired = StateClaimed, c.Expired(now)
		if st.LeaseExpired {
			st.State = StateExpired
		}
	case wire.StatusBlocked:
		st.State = StateBlocked
	case wire.StatusReview:
		st.State = StateReview
	default:
		st.State = StateDone
	}
	if c.DeletedAt != nil {
		st.State = StateDeleted
	}
	return st
}

// NextWake is the earliest time after now at which a card may become
// claimable without any new event: a lease running out or a deferral
// ending. Zero when no such time is pending.
func (s *State) NextWake(now time.Time) time.Time {
	var next time.Time
	consider := func(t *time.Time) {
		if t != nil && t.After(now) && (next.IsZero() || t.Before(next)) {
			next = *t
		}
	}
	s.InClaimOrder(time.Time{}, func(c *wire.Card) bool {
		switch c.Status {
		case wire.StatusClaimed:
			consider(c.LeaseExpiresAt)
		case wire.StatusReady:
			consider(c.DeferUntil)
		}
		return true
	})
	return next
}
