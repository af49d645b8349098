package fold

import (
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"slices"
	"time"
)

// How a state backed by a snapshot source reads it. The pure code — the op
// rules, the selections, cycles, standings — reads only what the state holds
// in memory. Run under resolve, it lists what it lacked instead of reading
// it; resolve reads those lines from the snapshot, returning a read that
// fails as an error, and runs the pure code again, until it lacks nothing.
// So the fold never sees a read error: it runs only on what was read.
//
// Outside resolve (a query under Backlog.View, store code looking up one
// card), a lookup reads the snapshot itself; a read that fails answers
// "none" and is kept as the state's fault, which the entry point
// (Backlog.View, the writers' lock) returns instead of the answer.

// lazyReads is what a state has read from its source, and what the code
// running now lacked.
type lazyReads struct {
	leased   time.Time       // every card leased at or after this time is in memory
	leasedOK bool            // leased is set
	cand     frontier        // how far the snapshot's claim order has been read
	want     *wants          // what the pure code lacked; nil outside resolve
	spare    wants           // the outermost resolve's list, kept for the next one
	fault    error           // the first read that failed outside resolve
	refs     map[string]bool // ids whose referrers in the snapshot are in memory
}

// frontier is how far the snapshot's ready, claimed and review cards have
// been read in claim order, leaving out those under a lease live at at
// (none when at is zero).
type frontier struct {
	set  bool
	at   time.Time
	last wire.Card // the claim-order key of the last card read; ID empty before the first
	done bool      // nothing after last
	from int       // where the source goes on (a claim-order position; 0: the start)
	next int       // how many to read next: doubles, so a long scan reads few times
}

// serves reports whether a scan that leaves out the cards leased at q can
// use the frontier: every card it left out is left out at q too.
func (f *frontier) serves(q time.Time) bool {
	return f.set && (f.at.IsZero() || (!q.IsZero() && !q.After(f.at)))
}

// wants lists what pure code lacked, and what the snapshot was found to
// lack while one resolve runs (so the next run does not ask again).
type wants struct {
	cards, keys, receipts       []string
	refs                        []string // ids whose referrers are lacked
	all                         bool
	leased                      *time.Time
	candidates                  *time.Time
	noCards, noKeys, noReceipts []string
}

// next clears what the last run lacked, keeping what the snapshot lacks.
func (w *wants) next() {
	w.cards, w.keys, w.receipts, w.refs = w.cards[:0], w.keys[:0], w.receipts[:0], w.refs[:0]
	w.all, w.leased, w.candidates = false, nil, nil
}

// reset clears everything, for a new resolve.
func (w *wants) reset() {
	w.next()
	w.noCards, w.noKeys, w.noReceipts = w.noCards[:0], w.noKeys[:0], w.noReceipts[:0]
}

func (w *wants) empty() bool {
	return len(w.cards) == 0 && len(w.keys) == 0 && len(w.receipts) == 0 && len(w.refs) == 0 && !w.all && w.leased == nil && w.candidates == nil
}

// resolve runs pure until it lacks nothing, reading what it lacked between
// runs. pure must only read the state and set its results: it may run
// more than once, and an answer given while something was lacking is
// replaced by the next run's. A read that fails is returned, and pure's
// last answer is then void.
func (s *State) Resolve(pure func()) error {
	if s.src == nil && s.lz.want == nil {
		pure()
		return nil
	}
	outer := s.lz.want
	defer func() { s.lz.want = outer }()
	w := &s.lz.spare
	if outer != nil {
		w = &wants{} // a resolve inside another keeps the outer list
	}
	w.reset()
	for {
		if s.src == nil {
			s.lz.want = nil
			pure()
			return nil
		}
		w.next()
		s.lz.want = w
		pure()
		if w.empty() {
			return nil
		}
		s.lz.want = nil
		if err := s.readWants(w); err != nil {
			return err
		}
	}
}

// readWants reads from the source what pure code lacked.
func (s *State) readWants(w *wants) error {
	if w.all {
		return s.readAll()
	}
	for _, id := range w.cards {
		if ok, err := s.ReadCard(id); err != nil {
			return err
		} else if !ok {
			w.noCards = append(w.noCards, id)
		}
	}
	for _, id := range w.refs {
		if err := s.readReferrers(id); err != nil {
			return err
		}
	}
	for _, k := range w.keys {
		if ok, err := s.readKey(k); err != nil {
			return err
		} else if !ok {
			w.noKeys = append(w.noKeys, k)
		}
	}
	for _, r := range w.receipts {
		if ok, err := s.readReceipt(r); err != nil {
			return err
		} else if !ok {
			w.noReceipts = append(w.noReceipts, r)
		}
	}
	if w.leased != nil {
		if err := s.readLeased(*w.leased); err != nil {
			return err
		}
	}
	if w.candidates != nil {
		return s.readCandidates(*w.candidates)
	}
	return nil
}

// pending reports whether the code running under resolve has lacked
// something this run: what it concludes now is provisional.
func (s *State) pending() bool {
	return s.lz.want != nil && !s.lz.want.empty()
}

// lacks reports whether the state must read something before it can
// answer: under resolve, note records it and the answer waits; outside,
// read reads it now, a failure becoming the state's fault.
func (s *State) lacks(note func(w *wants), read func() error) bool {
	if s.lz.want != nil {
		note(s.lz.want)
		return true
	}
	if err := read(); err != nil {
		s.noteFault(err)
		return true
	}
	return false
}

func (s *State) noteFault(err error) {
	if s.lz.fault == nil {
		s.lz.fault = err
	}
}

// TakeFault returns and clears the read that failed outside resolve.
func (s *State) TakeFault() error {
	err := s.lz.fault
	s.lz.fault = nil
	return err
}

// card returns the card with the given id; nil when there is none, or
// (under resolve) when it has not been read yet.
func (s *State) Find(id string) *wire.Card {
	if s.undecoded > 0 && s.decodeLine(id) != nil {
		return nil // not the snapshot's older card: the fault is noted
	}
	if c, ok := s.cards[id]; ok || s.src == nil {
		return c
	}
	if w := s.lz.want; w != nil {
		if !slices.Contains(w.noCards, id) {
			w.cards = append(w.cards, id)
		}
		return nil
	}
	if _, err := s.ReadCard(id); err != nil {
		s.noteFault(err)
	}
	return s.cards[id]
}

// KeyOwner returns the id of the card created with an idempotency key.
func (s *State) KeyOwner(key string) (string, bool) {
	s.decodeQuoting(key) // a card not decoded yet may hold the key
	if id, ok := s.keys[key]; ok || s.src == nil {
		return id, ok
	}
	if w := s.lz.want; w != nil {
		if !slices.Contains(w.noKeys, key) {
			w.keys = append(w.keys, key)
		}
		return "", false
	}
	if _, err := s.readKey(key); err != nil {
		s.noteFault(err)
	}
	id, ok := s.keys[key]
	return id, ok
}

// Receipt returns what an earlier request with this id did.
func (s *State) Receipt(requestID string) (wire.Receipt, bool) {
	if r, ok := s.requests[requestID]; ok || s.src == nil {
		return r, ok
	}
	if w := s.lz.want; w != nil {
		if !slices.Contains(w.noReceipts, requestID) {
			w.receipts = append(w.receipts, requestID)
		}
		return wire.Receipt{}, false
	}
	if _, err := s.readReceipt(requestID); err != nil {
		s.noteFault(err)
	}
	r, ok := s.requests[requestID]
	return r, ok
}

// all makes the maps hold every card and receipt, for the callers that
// look at all of them; false (under resolve) when they do not yet.
func (s *State) All() bool {
	if s.src == nil {
		return true
	}
	return !s.lacks(func(w *wants) { w.all = true }, s.readAll)
}

// haveReferrers makes the maps hold every card that names id (as parent,
// dependency or link); false (under resolve) when they do not yet. A card
// the ledger changed since the snapshot is in memory already, so the
// cards in memory are then all that can name id.
func (s *State) haveReferrers(id string) bool {
	if s.src == nil || s.lz.refs[id] {
		return true
	}
	return !s.lacks(func(w *wants) { w.refs = append(w.refs, id) }, func() error { return s.readReferrers(id) })
}

// haveLeased makes the maps hold every card under a lease live at now
// (or in review); false (under resolve) when they do not yet.
func (s *State) haveLeased(now time.Time) bool {
	if s.src == nil || (s.lz.leasedOK && !now.Before(s.lz.leased)) {
		return true
	}
	return !s.lacks(func(w *wants) { w.leased = &now }, func() error { return s.readLeased(now) })
}

// claimFrontier returns how far the snapshot's claim order has been read
// for a scan that leaves out the cards leased at leasedAt: more is false
// when every such card is in memory; last (nil before the first read) is
// the claim-order key of the last card read.
func (s *State) claimFrontier(leasedAt time.Time) (last *wire.Card, more bool) {
	if s.src == nil {
		return nil, false
	}
	f := &s.lz.cand
	if !f.serves(leasedAt) {
		return nil, true
	}
	if f.last.ID != "" {
		last = &f.last
	}
	return last, !f.done
}

// moreCandidates reads the next cards of the snapshot's claim order;
// false (under resolve) when they have not been read yet.
func (s *State) moreCandidates(leasedAt time.Time) bool {
	return !s.lacks(func(w *wants) { w.candidates = &leasedAt }, func() error { return s.readCandidates(leasedAt) })
}

// The reads: each takes lines from the source into the maps and returns
// the error of a read that fails, leaving the maps as they were. found
// says whether the maps hold what was asked for after it.

func (s *State) ReadCard(id string) (found bool, err error) {
	if s.undecoded > 0 {
		if err := s.decodeLine(id); err != nil {
			return false, err
		}
	}
	if _, ok := s.cards[id]; ok || s.src == nil {
		return ok, nil
	}
	c, err := s.src.Card(id)
	if err != nil || c == nil {
		return false, err
	}
	s.cards[id] = c
	return true, nil
}

func (s *State) readKey(key string) (found bool, err error) {
	s.decodeQuoting(key)
	if _, ok := s.keys[key]; ok || s.src == nil {
		return ok, nil
	}
	id, ok, err := s.src.KeyOwner(key)
	if err != nil || !ok {
		return false, err
	}
	s.keys[key] = id
	return true, nil
}

func (s *State) readReceipt(rid string) (found bool, err error) {
	if _, ok := s.requests[rid]; ok || s.src == nil {
		return ok, nil
	}
	r, ok, err := s.src.Receipt(rid)
	if err != nil || !ok {
		return false, err
	}
	s.requests[rid] = r
	return true, nil
}

// readReferrers reads the snapshot's cards that name id and are not in
// memory.
func (s *State) readReferrers(id string) error {
	if s.src == nil || s.lz.refs[id] {
		return nil
	}
	cards, err := s.src.Referrers(id)
	if err != nil {
		return err
	}
	for _, c := range cards {
		if !s.holds([]byte(c.ID)) {
			s.cards[c.ID] = c
		}
	}
	if s.lz.refs == nil {
		s.lz.refs = map[string]bool{}
	}
	s.lz.refs[id] = true
	return nil
}

// readAll reads whatever the source still holds into the maps and drops
// the source.
func (s *State) readAll() error {
	if s.src == nil {
		return nil
	}
	if err := s.src.Fill(s.mem(), s.requests); err != nil {
		return err
	}
	for id, c := range s.mem() {
		if c.IdempotencyKey != "" {
			s.keys[c.IdempotencyKey] = id
		}
	}
	s.src.Close()
	s.src = nil
	s.lz = lazyReads{want: s.lz.want, fault: s.lz.fault, spare: s.lz.spare}
	return nil
}

// readLeased reads the cards under a lease live at now, and those in
// review, that are not in memory.
func (s *State) readLeased(now time.Time) error {
	if s.src == nil {
		return nil
	}
	read := map[string]*wire.Card{}
	if err := s.src.Leased(now, s.holds, func(c *wire.Card) bool {
		read[c.ID] = c
		return true
	}); err != nil {
		return err
	}
	for id, c := range read {
		s.cards[id] = c
	}
	s.lz.leased, s.lz.leasedOK = now, true
	return nil
}

// readCandidates reads the next cards of the snapshot's claim order after
// the frontier (from the start when the frontier does not serve
// leasedAt), leaving out those in memory.
func (s *State) readCandidates(leasedAt time.Time) error {
	if s.src == nil {
		return nil
	}
	f := &s.lz.cand
	if !f.serves(leasedAt) {
		*f = frontier{set: true, at: leasedAt}
	}
	if f.done {
		return nil
	}
	n := max(f.next, 1)
	read := make([]*wire.Card, 0, min(n, s.src.Count()))
	from, err := s.src.Candidates(f.from, f.at, s.holds, func(c *wire.Card) bool {
		if f.last.ID != "" && ClaimOrder(c, &f.last) <= 0 {
			return true
		}
		read = append(read, c)
		return len(read) < n
	})
	if err != nil {
		return err
	}
	f.from = from
	for _, c := range read {
		s.cards[c.ID] = c
	}
	if len(read) < n {
		f.done = true
	}
	if len(read) > 0 {
		c := read[len(read)-1]
		f.last = wire.Card{ID: c.ID, Priority: c.Priority, CreatedAt: c.CreatedAt}
	}
	f.next = 2 * n
	return nil
}
