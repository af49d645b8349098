package ledger

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// FuzzDecodeLine: whatever bytes decode to an event fold without a panic,
// as a change or a conflict. (That they encode back to the same event is
// package wire's test of this name, which holds the stored corpus.)
func FuzzDecodeLine(f *testing.F) {
	for _, ev := range wire.SnapshotEvents() {
		line, err := EncodeLine(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
		f.Add(line[:len(line)/2])
	}
	f.Add([]byte{})
	f.Add(frame(`{"v":1,"id":"e","at":"2026-01-01T00:00:00+02:00","actor":"a","op":"heartbeat","card":"A","checkpoint":{ "a" : [1, 2] },"progress":5}`))
	f.Add(frame(`{"v":1,"id":"e","at":"2026-01-01T00:00:00Z","actor":"a","op":"create","card":"A","fields":{"labels":null,"title":"\u00e9\ud800"},"x":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		foldDecoded(data)
		// Most random bytes fail the checksum; checksum them so the
		// fold sees what the parser behind it takes.
		if obj := bytes.TrimSuffix(data, []byte{'\n'}); len(obj) >= 2 && obj[0] == '{' && obj[len(obj)-1] == '}' {
			foldDecoded(frame(string(obj)))
		}
	})
}

// foldDecoded applies the event line decodes to, if any, to an empty state.
func foldDecoded(line []byte) {
	if e, err := DecodeLine(line); err == nil {
		_ = fold.NewState().Apply(e)
	}
}

// The fold fuzzer drives a few cards and owners through random events,
// each built from four fuzz bytes, and checks the fold against the rules
// that must always hold and against a small reference model.
var (
	fuzzCards  = []string{"A", "B", "C"}
	fuzzOwners = []string{"w1", "w2", "w3", ""}
)

// opByte values: the op is ops[b % len(ops)].
var fuzzOps = []Op{OpCreate, OpClaim, OpClaim, OpHeartbeat, OpRelease, OpReclaim, OpComplete, OpBlock,
	wire.OpUnblock, wire.OpReopen, OpLink, OpUnlink, OpUpdate, OpClaim, OpFail, OpNote}

// buildFuzzEvent turns four bytes into an event against the current state:
//
//	b[0] the op, fuzzOps[b[0] % len(fuzzOps)]
//	b[1] the card (low two bits) and the owner (next two bits)
//	b[2] the argument: bits 0-2 a small number n (ttl, max attempts, link
//	     target), bit 3 and bit 4 flags, bits 5-6 how far the lease fields
//	     are off (0 or 1 exact, 2 one less, 3 one more)
//	b[3] how far the clock moves first, in quarter seconds (mod 32)
func buildFuzzEvent(s *fold.State, n int, at time.Time, b [4]byte) *Event {
	op := fuzzOps[int(b[0])%len(fuzzOps)]
	card := fuzzCards[int(b[1]&3)%len(fuzzCards)]
	owner := fuzzOwners[int(b[1]>>2)&3]
	arg := b[2]
	num, flag1, flag2 := int(arg&7), arg&8 != 0, arg&16 != 0
	e := &Event{V: 1, ID: fmt.Sprintf("e%06d", n), At: at, Actor: "fuzz", Op: op, Card: card}
	c, _ := s.Card(card)
	skew := func(v int64) int64 {
		switch (arg >> 5) & 3 {
		case 2:
			return v - 1
		case 3:
			return v + 1
		}
		return v
	}
	switch op {
	case OpCreate:
		e.Fields = &Fields{Title: strp("t"), MaxAttempts: intp(num % 3)}
		if flag1 {
			e.Fields.Priority = intp(num - 3)
		}
	case OpUpdate:
		e.Fields = &Fields{MaxAttempts: intp(num % 3)}
	case OpClaim:
		e.Owner, e.TTLSeconds = owner, int64(num%6)
		e.ExpectVersion, e.Epoch = c.Version, skew(c.ClaimEpoch+1)
		if flag1 {
			e.ExpectVersion++
		}
	case OpHeartbeat:
		e.Owner, e.TTLSeconds = owner, int64(num%4)
		if flag1 {
			e.Progress = intp(int(arg)%120 - 5)
		}
		if flag2 {
			e.Epoch = skew(c.ClaimEpoch)
		}
	case OpRelease, OpComplete, OpBlock:
		if flag1 { // a lease holder acting, else an administrator
			e.Owner = owner
			if owner == "" {
				e.Owner = c.ClaimOwner
			}
		}
		if flag2 {
			e.Epoch = skew(c.ClaimEpoch)
		}
	case OpReclaim:
		e.Epoch, e.Force = skew(c.ClaimEpoch), flag2
		if flag1 {
			e.BackoffSeconds, e.BackoffMaxSeconds = int64(num%3), int64(num%5)
		}
	case OpLink, OpUnlink:
		e.To = fuzzCards[num%len(fuzzCards)]
	case OpFail:
		e.Owner = owner
		if owner == "" && flag1 {
			e.Owner = c.ClaimOwner
		}
		if flag2 {
			e.Epoch = skew(c.ClaimEpoch)
		}
		e.BackoffSeconds, e.BackoffMaxSeconds = int64(num%3), int64(num%5)
	case OpNote:
		if flag1 {
			e.Owner = owner
			if flag2 {
				e.Epoch = skew(c.ClaimEpoch)
			}
		}
		e.Text = []string{"n", "", " "}[num%3]
	}
	return e
}

// model is a reference implementation of the lease and status rules for
// the events buildFuzzEvent makes.
type model struct {
	cards map[string]*mcard
}

type mcard struct {
	status   Status
	owner    string
	epoch    int64
	ttl      int64
	expires  time.Time
	attempts int
	max      int
	version  int64
	deps     []string
	defer_   time.Time // not claimable before
}

func (m *model) reaches(from, to string, seen map[string]bool) bool {
	if from == to {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, d := range m.cards[from].deps {
		if m.reaches(d, to, seen) {
			return true
		}
	}
	return false
}

// apply reports whether the model accepts e, and applies it if so.
func (m *model) apply(e *Event) bool {
	c := m.cards[e.Card]
	if e.Op == OpCreate {
		if c != nil {
			return false
		}
		m.cards[e.Card] = &mcard{status: StatusReady, max: *e.Fields.MaxAttempts, version: 1}
		return true
	}
	if c == nil {
		return false
	}
	live := c.status == StatusClaimed && e.At.Before(c.expires)
	exhausted := c.max > 0 && c.attempts >= c.max
	fenced := func() bool {
		return e.Owner == "" || c.status != StatusClaimed || c.owner != e.Owner || (e.Epoch != 0 && e.Epoch != c.epoch)
	}
	putBack := func() {
		c.owner, c.ttl, c.expires = "", 0, time.Time{}
		if c.max > 0 && c.attempts >= c.max {
			c.status = StatusBlocked
		} else {
			c.status = StatusReady
		}
	}
	// backOff defers a card that failed its attempt: initial seconds after
	// the first failed attempt, twice that after the next, at most maxS
	// (no cap when 0).
	backOff := func(initial, maxS int64) {
		if c.status != StatusReady || initial <= 0 {
			return
		}
		d := initial
		if maxS > 0 && d > maxS {
			d = maxS
		}
		for n := 1; n < c.attempts && (maxS <= 0 || d < maxS) && d < 1<<20; n++ {
			d *= 2
			if maxS > 0 && d > maxS {
				d = maxS
			}
		}
		if until := e.At.Add(time.Duration(d) * time.Second); until.After(c.defer_) {
			c.defer_ = until
		}
	}
	switch e.Op {
	case OpUpdate:
		c.max = *e.Fields.MaxAttempts
	case OpClaim:
		if e.Owner == "" || e.TTLSeconds < 1 || c.status == StatusDone || c.status == StatusBlocked ||
			(live && c.owner != e.Owner) || (exhausted && !(live && c.owner == e.Owner)) ||
			e.ExpectVersion != c.version || e.Epoch != c.epoch+1 || e.At.Before(c.defer_) {
			return false
		}
		for _, d := range c.deps {
			if m.cards[d].status != StatusDone {
				return false
			}
		}
		if !(live && c.owner == e.Owner) {
			c.attempts++
		}
		c.status, c.owner, c.epoch, c.ttl = StatusClaimed, e.Owner, e.Epoch, e.TTLSeconds
		c.expires = e.At.Add(time.Duration(e.TTLSeconds) * time.Second)
	case OpHeartbeat:
		if fenced() || (e.Progress != nil && (*e.Progress < 0 || *e.Progress > 100)) {
			return false
		}
		if e.TTLSeconds > 0 {
			c.ttl = e.TTLSeconds
		}
		c.expires = e.At.Add(time.Duration(c.ttl) * time.Second)
	case OpRelease:
		if fenced() {
			return false
		}
		putBack()
	case OpReclaim:
		if c.status != StatusClaimed || e.Epoch != c.epoch || (!e.Force && live) {
			return false
		}
		putBack()
		if !live {
			backOff(e.BackoffSeconds, e.BackoffMaxSeconds)
		}
	case OpFail:
		if fenced() {
			return false
		}
		putBack()
		backOff(e.BackoffSeconds, e.BackoffMaxSeconds)
	case OpNote:
		if (e.Owner != "" && fenced()) || strings.TrimSpace(e.Text) == "" {
			return false
		}
	case OpComplete, OpBlock:
		if c.status == StatusDone || (e.Owner != "" && fenced()) {
			return false
		}
		c.owner, c.ttl, c.expires = "", 0, time.Time{}
		c.status = map[Op]Status{OpComplete: StatusDone, OpBlock: StatusBlocked}[e.Op]
	case wire.OpUnblock:
		// A lease that ran out with the attempts used up is blocked too.
		if c.status != StatusBlocked && !(c.status == StatusClaimed && !live && exhausted) {
			return false
		}
		c.owner, c.ttl, c.expires = "", 0, time.Time{}
		if exhausted {
			c.attempts = 0
		}
		c.status = StatusReady
	case wire.OpReopen:
		if c.status != StatusDone {
			return false
		}
		c.status, c.attempts = StatusReady, 0
	case OpLink:
		if e.To == e.Card || m.cards[e.To] == nil || slices.Contains(c.deps, e.To) || m.reaches(e.To, e.Card, map[string]bool{}) {
			return false
		}
		c.deps = append(c.deps, e.To)
	case OpUnlink:
		if !slices.Contains(c.deps, e.To) {
			return false
		}
		c.deps = slices.DeleteFunc(c.deps, func(d string) bool { return d == e.To })
	}
	c.version++
	return true
}

// checkFold applies the events the fuzz bytes describe and checks every
// step. It returns the events built.
func checkFold(t *testing.T, data []byte) []*Event {
	s := fold.NewState()
	ref := &model{cards: map[string]*mcard{}}
	applied := map[string]int64{}
	at := t0
	var events []*Event
	rejected := 0
	for i := 0; i+4 <= len(data) && i < 4*400; i += 4 {
		var b [4]byte
		copy(b[:], data[i:i+4])
		at = at.Add(time.Duration(b[3]%32)*250*time.Millisecond + 1)
		e := buildFuzzEvent(s, len(events), at, b)
		events = append(events, e)

		before := map[string]Card{}
		for _, id := range fuzzCards {
			if c, ok := s.Card(id); ok {
				before[id] = c
			}
		}
		snapshot := stateJSON(t, s)
		checkErr := s.Check(e)
		err := s.Apply(e)
		if (checkErr == nil) != (err == nil) {
			t.Fatalf("event %d %s: Check says %v, Apply says %v", i/4, e.Op, checkErr, err)
		}
		if want := ref.apply(e); want != (err == nil) {
			t.Fatalf("event %d %+v: fold says %v, model accepts=%v", i/4, e, err, want)
		}
		if err != nil {
			rejected++
			if !isRule(err) {
				t.Fatalf("refusal is not a rule error: %v", err)
			}
			if got := stateJSON(t, s); got != snapshot {
				t.Fatalf("refused %s changed the state", e.Op)
			}
		} else {
			applied[e.Card]++
		}
		for _, id := range fuzzCards {
			c, ok := s.Card(id)
			if !ok {
				continue
			}
			mc := ref.cards[id]
			if c.Status != mc.status || c.ClaimOwner != mc.owner || c.ClaimEpoch != mc.epoch || c.Attempts != mc.attempts ||
				c.Version != mc.version || !slices.Equal(c.DependsOn, mc.deps) || c.MaxAttempts != mc.max {
				t.Fatalf("after event %d %+v card %s = %+v, model %+v", i/4, e, id, c, mc)
			}
			if (c.DeferUntil != nil || !mc.defer_.IsZero()) && (c.DeferUntil == nil || !c.DeferUntil.Equal(mc.defer_)) {
				t.Fatalf("card %s deferred until %v, model %v", id, c.DeferUntil, mc.defer_)
			}
			if c.Status == StatusClaimed && !c.LeaseExpiresAt.Equal(mc.expires) {
				t.Fatalf("card %s lease ends %v, model %v", id, c.LeaseExpiresAt, mc.expires)
			}
			if (c.ClaimOwner != "") != (c.Status == StatusClaimed) || (c.LeaseExpiresAt != nil) != (c.Status == StatusClaimed) {
				t.Fatalf("card %s is %s with owner %q and lease %v", id, c.Status, c.ClaimOwner, c.LeaseExpiresAt)
			}
			if c.Version != applied[id] {
				t.Fatalf("card %s version %d after %d applied events", id, c.Version, applied[id])
			}
			if !c.Status.Valid() || c.Attempts < 0 {
				t.Fatalf("card %s = %+v", id, c)
			}
			if p, ok := before[id]; ok {
				if c.ClaimEpoch < p.ClaimEpoch {
					t.Fatalf("card %s epoch went from %d to %d", id, p.ClaimEpoch, c.ClaimEpoch)
				}
				if p.Status == StatusDone && c.Status != StatusDone && (e.Op != wire.OpReopen || c.Status != StatusReady) {
					t.Fatalf("card %s left done by %s to %s", id, e.Op, c.Status)
				}
				if e.Op == OpClaim && err == nil && e.Card == id && c.Attempts > p.Attempts && c.MaxAttempts > 0 && c.Attempts > c.MaxAttempts {
					t.Fatalf("card %s claimed beyond max attempts: %d of %d", id, c.Attempts, c.MaxAttempts)
				}
			}
		}
	}
	if s.Events() != int64(len(events)) || len(s.Conflicts()) != rejected {
		t.Fatalf("events %d conflicts %d, want %d and %d", s.Events(), len(s.Conflicts()), len(events), rejected)
	}
	// The same events written out and read back fold to the same state.
	var evs []*Event
	for _, e := range events {
		line, err := EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		d, err := DecodeLine(line)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, d)
	}
	if a, b := stateJSON(t, fold.Fold(evs)), stateJSON(t, s); a != b {
		t.Fatalf("fold of the encoded events differs:\n%s\n%s", a, b)
	}
	return events
}

func FuzzFold(f *testing.F) {
	for _, seed := range fuzzFoldSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFold(t, data)
	})
}

// fuzzFoldSeeds are hand-built event scripts in buildFuzzEvent's encoding.
func fuzzFoldSeeds() [][]byte {
	const (
		create, claim, heartbeat, release, reclaim, complete, block, unblock, reopen, link, unlink, update = 0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12

		A, B, C            = 0, 1, 2
		w1, w2, w3, nobody = 0 << 2, 1 << 2, 2 << 2, 3 << 2

		ttl5     = 5
		holder   = 8  // release, complete, block: by the lease holder
		epoch    = 16 // lease ops: carry the epoch
		force    = 16 // reclaim
		badVer   = 8  // claim: stale expect_version
		progress = 8  // heartbeat
		minus1   = 2 << 5
		plus1    = 3 << 5
	)
	return [][]byte{
		// Create A, claim by w1, heartbeats with progress, complete by the
		// holder, reopen, claim by w2.
		{create, A, 0, 1, claim, A | w1, ttl5, 1, heartbeat, A | w1, progress | epoch | 2, 4, heartbeat, A | w1, 3, 4,
			complete, A | w1, holder | epoch, 1, reopen, A, 0, 1, claim, A | w2, ttl5, 1},
		// Lease expiry and takeover; the stale owner is fenced, the new
		// one is not.
		{create, A, 0, 1, claim, A | w1, 1, 1, heartbeat, A | w1, 0, 2, claim, A | w2, 1, 31, heartbeat, A | w1, epoch | 2, 1,
			release, A | w1, holder, 1, release, A | w2, holder | epoch, 1},
		// max_attempts 2: two claims and releases leave A blocked; a third
		// claim is refused; unblock gives a fresh budget.
		{create, A, 2, 1, claim, A | w1, ttl5, 1, release, A | w1, holder, 1, claim, A | w2, ttl5, 1, release, A | w2, holder, 1,
			claim, A | w3, ttl5, 1, unblock, A, 0, 1, claim, A | w3, ttl5, 1},
		// Dependencies, a cycle attempt, unlink.
		{create, A, 0, 1, create, B, 0, 1, link, A, B, 1, link, B, A, 1, claim, A | w1, ttl5, 1, complete, B, 0, 1,
			claim, A | w1, ttl5, 1, unlink, A, B, 1},
		// Stale and future epochs and versions, the owner re-claiming its
		// own lease, unforced and forced reclaim, block while claimed.
		{create, B, 0, 1, claim, B | w1, ttl5 | badVer, 1, claim, B | w1, ttl5 | plus1, 1, claim, B | w1, ttl5, 1,
			claim, B | w1, ttl5, 1, heartbeat, B | w1, epoch | minus1, 1, reclaim, B, 0, 1, reclaim, B, force | minus1, 1,
			reclaim, B, force, 1, claim, B | w2, ttl5, 1, block, B | w2, holder | epoch, 1, update, B, 1, 1},
		// An owner-less claim and a zero ttl are refused; progress out of
		// range is refused.
		{create, C, 0, 1, claim, C | nobody, ttl5, 1, claim, C | w1, 0, 1, claim, C | w1, 1, 1, heartbeat, C | w1, 106, 1, heartbeat, C | w1, 120, 1},
	}
}
