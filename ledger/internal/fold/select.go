package fold

import (
	"cmp"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Filter narrows List, Ready and Claim. Zero fields match everything.
type Filter struct {
	Status []wire.Status // any of these
	Phase  string        // this phase; with Phases, this one or any of those
	Phases []string      // any of these phases
	Label  string        // cards carrying this label
	Owner  string        // current claim owner
	Parent string        // children of this card
	Ready  bool          // claimable now
	Limit  int           // at most this many; 0 = all
	// Assignee: cards assigned to this name; Unassigned ("-"): cards
	// assigned to nobody.
	Assignee string
	// Claimer passes over the cards assigned to anyone else: what a
	// plain claim or ready by this owner may take.
	Claimer string
}

// Unassigned as Filter.Assignee matches the cards assigned to nobody; it
// is never an assignee's name (wire.ValidAssignee).
const Unassigned = "-"

// Sort orders for List.
const (
	SortClaim   = "claim"   // claim order: priority desc, created asc, id asc
	SortCreated = "created" // created asc (the source's time for an imported card), id asc
	SortUpdated = "updated" // updated desc, id asc
	SortID      = "id"
)

// claimable reports why c cannot be claimed by owner at now, or nil. A live
// lease blocks everyone but its own owner, who may re-claim to fence out an
// older incarnation of itself.
func (s *State) claimable(c *wire.Card, now time.Time, owner string) error {
	switch c.Status {
	case wire.StatusDone:
		return wire.Rule(wire.ErrConflict, "card %s is done", c.ID)
	case wire.StatusBlocked:
		return wire.Rule(wire.ErrConflict, "card %s is blocked: %s", c.ID, orDash(c.BlockedReason))
	case wire.StatusReview:
		return wire.Rule(wire.ErrConflict, "card %s is in review", c.ID)
	case wire.StatusClaimed:
		if c.Leased(now) && c.ClaimOwner != owner {
			return wire.Rule(wire.ErrConflict, "card %s is claimed by %s until %s", c.ID, c.ClaimOwner, c.LeaseExpiresAt.Format(time.RFC3339))
		}
	}
	if c.Exhausted() && !(c.Leased(now) && c.ClaimOwner == owner) {
		return wire.Rule(wire.ErrConflict, "card %s has used all %d attempts", c.ID, c.MaxAttempts)
	}
	if c.DeferUntil != nil && now.Before(*c.DeferUntil) {
		return wire.Rule(wire.ErrConflict, "card %s is deferred until %s", c.ID, c.DeferUntil.Format(time.RFC3339))
	}
	for _, d := range c.DependsOn {
		if dc := s.Find(d); dc == nil || dc.Status != wire.StatusDone {
			st := wire.Status("missing")
			if dc != nil {
				st = dc.Status
			}
			return wire.Rule(wire.ErrConflict, "card %s waits on %s (%s)", c.ID, d, st)
		}
	}
	if len(c.Links) > 0 {
		return s.typedLinksHold(c)
	}
	return nil
}

// Claimable reports whether anyone may claim the card at now.
func (s *State) Claimable(id string, now time.Time) bool {
	c := s.Find(id)
	return c != nil && s.Selectable(c, now, "") == nil
}

func (f *Filter) Match(s *State, c *wire.Card, now time.Time) bool {
	if c.DeletedAt != nil || (f.Parent != "" && c.Parent != f.Parent) {
		return false
	}
	status := c.Status
	if c.Lapsed(now) {
		status = wire.StatusBlocked // as readers show it (Card.view)
	}
	if len(f.Status) > 0 && !slices.Contains(f.Status, status) {
		return false
	}
	if !f.phaseMatch(c.Phase) {
		return false
	}
	if f.Label != "" && !slices.Contains(c.Labels, f.Label) {
		return false
	}
	if f.Owner != "" && (status != wire.StatusClaimed || c.ClaimOwner != f.Owner) {
		return false
	}
	switch {
	case f.Assignee == Unassigned && c.Assignee != "",
		f.Assignee != "" && f.Assignee != Unassigned && c.Assignee != f.Assignee,
		f.Claimer != "" && c.Assignee != "" && c.Assignee != f.Claimer:
		return false
	}
	if f.Ready && s.Selectable(c, now, "") != nil {
		return false
	}
	return true
}

// phaseMatch reports whether a card in phase p passes f's phase test.
func (f *Filter) phaseMatch(p string) bool {
	if f.Phase == "" && len(f.Phases) == 0 {
		return true
	}
	return (f.Phase != "" && p == f.Phase) || slices.Contains(f.Phases, p)
}

// ClaimOrder compares two cards in claim order, the order claim takes
// them in: priority desc, then created_at asc, then id asc. It returns a
// negative number when a comes first, as cmp.Compare does.
func ClaimOrder(a, b *wire.Card) int {
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// order is a card's place in claim order, for a card not decoded yet.
type order struct {
	prio    int
	created time.Time
	id      string
}

func orderOf(id string, prio int, created time.Time) order {
	return order{prio: prio, created: created, id: id}
}

// cmp is ClaimOrder of the cards at a and b (kept apart: a sort of 100k
// cards by ClaimOrder is twice as slow through it).
func (a *order) cmp(b *order) int {
	if a.prio != b.prio {
		return cmp.Compare(b.prio, a.prio)
	}
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// List returns copies of the cards matching f at now, in the given sort
// order (SortClaim when empty).
func (s *State) List(f Filter, now time.Time, sortBy string) []wire.Card {
	hits := s.listed(f, now, sortBy)
	out := make([]wire.Card, len(hits))
	for i, c := range hits {
		out[i] = c.Clone()
		out[i].View(now)
	}
	return out
}

// EachListed hands fn the cards List returns, in its order, one at a
// time and without copying them all: a list of 100k cards is not held
// twice. The card fn gets is valid for the call only and shares its
// slices with the state: fn must neither keep nor change it. It stops at
// fn's first error.
func (s *State) EachListed(f Filter, now time.Time, sortBy string, fn func(c *wire.Card) error) error {
	var c wire.Card // one copy, reused: fn must not keep it
	for _, h := range s.listed(f, now, sortBy) {
		if h.Lapsed(now) {
			c = h.Clone() // View changes it
			c.View(now)
		} else {
			c = *h
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// listed is the cards matching f at now, in List's order, as the state
// holds them.
func (s *State) listed(f Filter, now time.Time, sortBy string) []*wire.Card {
	var hits []*wire.Card
	if (sortBy == "" || sortBy == SortClaim) && f.candidatesOnly() {
		// Only ready and claimed cards can match, and they come in claim
		// order: stop at the limit instead of reading every card.
		var skip time.Time
		if f.Ready {
			skip = now // a card under a live lease is not claimable
		}
		s.InClaimOrder(skip, func(c *wire.Card) bool {
			if f.Match(s, c, now) {
				hits = append(hits, c)
			}
			return f.Limit <= 0 || len(hits) < f.Limit
		})
	} else {
		s.All()
		hits = make([]*wire.Card, 0, len(s.mem()))
		for _, c := range s.mem() {
			if f.Match(s, c, now) {
				hits = append(hits, c)
			}
		}
		slices.SortFunc(hits, orderFor(sortBy))
	}
	if f.Limit > 0 && len(hits) > f.Limit {
		hits = hits[:f.Limit]
	}
	return hits
}

// candidatesOnly reports whether only ready, claimed or review cards can match f.
func (f *Filter) candidatesOnly() bool {
	if f.Ready {
		return true
	}
	if len(f.Status) == 0 {
		return false
	}
	for _, st := range f.Status {
		if st != wire.StatusReady && st != wire.StatusClaimed && st != wire.StatusReview {
			return false
		}
	}
	return true
}

// candidate reports whether a card with status st is one the claim-order
// walk hands on.
func candidate(st wire.Status) bool {
	return st == wire.StatusReady || st == wire.StatusClaimed || st == wire.StatusReview
}

// InClaimOrder calls fn with every ready, claimed or review card, in claim
// order, until fn returns false. Cards the snapshot holds and nothing has
// touched since are read from the source in claim order, a few at a time,
// as the scan reaches them (claimFrontier); the cards in memory are sorted
// and merged in, those of a checkpoint's lines not decoded yet by the key
// each line carries, each decoded only when fn gets it. With leasedAt set,
// cards whose lease is live at that time may be left out unread (nobody
// can claim them then): those in memory are. Under resolve the scan stops
// where it lacks cards, and the next run goes on. A line that does not
// decode to its card and key ends the scan, its fault noted.
func (s *State) InClaimOrder(leasedAt time.Time, fn func(c *wire.Card) bool) {
	var last *order // the place of the last card fn saw
	type inMem struct {
		at order
		c  *wire.Card // nil: a line not decoded yet
	}
	var mem []inMem
	for {
		frontCard, more := s.claimFrontier(leasedAt)
		var front *order
		if frontCard != nil {
			front = &order{frontCard.Priority, frontCard.CreatedAt, frontCard.ID}
		}
		// The cards after the last one fn saw, up to the frontier: the
		// snapshot may hold cards before any later one.
		next := func(at order) bool {
			return (last == nil || at.cmp(last) > 0) && !(more && (front == nil || at.cmp(front) > 0))
		}
		mem = mem[:0]
		if !more || front != nil {
			for _, c := range s.cards {
				if at := orderOf(c.ID, c.Priority, c.CreatedAt); candidate(c.Status) && next(at) && (leasedAt.IsZero() || !c.Leased(leasedAt)) {
					mem = append(mem, inMem{at, c})
				}
			}
			for i := range s.lines {
				l := &s.lines[i]
				if at := orderOf(l.ID, l.Key.Priority, l.Key.CreatedAt); l.Line != nil && candidate(l.Key.Status) && next(at) && (leasedAt.IsZero() || !l.Key.leased(leasedAt)) {
					mem = append(mem, inMem{at, nil})
				}
			}
		}
		slices.SortFunc(mem, func(a, b inMem) int { return a.at.cmp(&b.at) })
		for _, m := range mem {
			c := m.c
			if c == nil {
				// Decoded by id: fn may have decoded it, or every line.
				if c = s.decoded(m.at.id); c == nil {
					return // the line does not read, or is not its key's
				}
			}
			last = &m.at
			if !fn(c) {
				return
			}
		}
		if !more || !s.moreCandidates(leasedAt) {
			return
		}
	}
}

func orderFor(sortBy string) func(a, b *wire.Card) int {
	switch sortBy {
	case SortCreated:
		// An imported card sorts by when its tracker created it.
		return func(a, b *wire.Card) int {
			if c := a.Created().Compare(b.Created()); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		}
	case SortUpdated:
		return func(a, b *wire.Card) int {
			if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		}
	case SortID:
		return func(a, b *wire.Card) int { return cmp.Compare(a.ID, b.ID) }
	}
	return ClaimOrder
}

// ValidSort reports whether sortBy names a List order.
func ValidSort(sortBy string) bool {
	switch sortBy {
	case "", SortClaim, SortCreated, SortUpdated, SortID:
		return true
	}
	return false
}

// Pick returns the card a claim at now would take: the first card
// claimable by anyone that matches f, in claim order, or nil. A card under
// a live lease is never picked, not even for its own owner: claiming by id
// is how an owner renews its own lease under a new epoch.
func (s *State) Pick(f Filter, now time.Time) *wire.Card {
	var best *wire.Card
	s.InClaimOrder(now, func(c *wire.Card) bool {
		if f.Match(s, c, now) && s.Selectable(c, now, "") == nil && s.PathsHeldBy(c, now) == nil {
			best = c
		}
		return best == nil
	})
	if best == nil {
		return nil
	}
	cp := best.Clone()
	return &cp
}

// Stats summarises a backlog at now.
type Stats struct {
	Cards          int                 `json:"cards"`
	ByStatus       map[wire.Status]int `json:"by_status"`
	Claimable      int                 `json:"claimable"`
	ExpiredClaims  int                 `json:"expired_claims"`
	OldestReadyAge float64             `json:"oldest_ready_age_seconds"`
	OldestReadyID  string              `json:"oldest_ready_id,omitempty"`
	Conflicts      int                 `json:"conflicts"`
	Epics          int                 `json:"epics"`   // cards with children (deleted children aside)
	Deleted        int                 `json:"deleted"` // tombstones, not counted in Cards
	Events         int64               `json:"events"`
	LedgerBytes    int64               `json:"ledger_bytes"`

	// Compaction figures: events in the ledger tail since the last
	// compaction, the snapshot's size and age, compactions so far, and the
	// last automatic compaction's failure.
	EventsSinceCompaction int64      `json:"events_since_compaction"`
	SnapshotBytes         int64      `json:"snapshot_bytes"`
	SnapshotAt            *time.Time `json:"snapshot_at,omitempty"`
	SnapshotAgeSeconds    float64    `json:"snapshot_age_seconds"`
	Compactions           int        `json:"compactions"`
	CompactError          string     `json:"compact_error,omitempty"`
}

// Stats counts cards by status, claimable and expired cards, and the age of
// the oldest ready card at now.
func (s *State) Stats(now time.Time) Stats {
	s.All()
	st := Stats{Cards: len(s.mem()), Conflicts: len(s.conflicts), Events: s.events, ByStatus: map[wire.Status]int{}}
	for _, status := range wire.Statuses {
		st.ByStatus[status] = 0
	}
	var oldest *wire.Card
	parents := map[string]bool{}
	for _, c := range s.mem() {
		if c.Parent != "" && c.DeletedAt == nil {
			parents[c.Parent] = true
		}
	}
	for _, c := range s.mem() {
		if c.DeletedAt != nil {
			st.Cards--
			st.Deleted++
			continue
		}
		if parents[c.ID] {
			st.Epics++
		}
		if c.Lapsed(now) {
			st.ByStatus[wire.StatusBlocked]++ // as every reader shows it (Card.view)
		} else {
			st.ByStatus[c.Status]++
		}
		if s.Selectable(c, now, "") == nil {
			st.Claimable++
		}
		if c.Expired(now) && !c.Lapsed(now) {
			st.ExpiredClaims++
		}
		if c.Status == wire.StatusReady && (oldest == nil || c.CreatedAt.Before(oldest.CreatedAt) || (c.CreatedAt.Equal(oldest.CreatedAt) && c.ID < oldest.ID)) {
			oldest = c
		}
	}
	if oldest != nil {
		st.OldestReadyAge = now.Sub(oldest.CreatedAt).Seconds()
		st.OldestReadyID = oldest.ID
	}
	return st
}

// Expired returns the ids of cards whose leases have run out at now, sorted.
func (s *State) Expired(now time.Time) []string {
	var ids []string
	s.All()
	for _, c := range s.mem() {
		if c.Expired(now) {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PickTop returns up to k claimable cards matching f, best first: the
// cards Pick would return one after another.
func (s *State) PickTop(f Filter, now time.Time, k int) []wire.Card {
	var out []wire.Card
	s.InClaimOrder(now, func(c *wire.Card) bool {
		if f.Match(s, c, now) && s.claimable(c, now, "") == nil {
			out = append(out, c.Clone())
		}
		return len(out) < k
	})
	return out
}
