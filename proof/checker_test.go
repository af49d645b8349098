package proof

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// story builds a history by hand: ledger events and the calls that wrote
// them, with times given in milliseconds from a fixed origin.
type story struct {
	t      *testing.T
	t0     time.Time
	ledger []byte
	events []*ledger.Event
	calls  []Call
	seq    int
	cards  []string
}

func newStory(t *testing.T) *story {
	return &story{t: t, t0: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
}

func (s *story) at(ms float64) time.Time {
	return s.t0.Add(time.Duration(ms * float64(time.Millisecond)))
}

// line appends an event to the ledger at ms.
func (s *story) line(ms float64, e ledger.Event) *ledger.Event {
	s.seq++
	e.V, e.ID, e.At = 1, fmt.Sprintf("%016x", s.seq), s.at(ms)
	if e.Actor == "" {
		e.Actor = "test"
	}
	b, err := ledger.EncodeLine(&e)
	if err != nil {
		s.t.Fatal(err)
	}
	s.ledger = append(s.ledger, b...)
	s.events = append(s.events, &e)
	return &e
}

// create writes a create line and its acknowledged call.
func (s *story) create(ms float64, id string) {
	rid := "create-" + id
	title := "card " + id
	s.line(ms, ledger.Event{Op: ledger.OpCreate, Card: id, RequestID: rid, Fields: &ledger.Fields{Title: &title}})
	s.cards = append(s.cards, id)
	s.call(ms-1, ms+1, Call{Op: "create", Card: id, RequestID: rid}, 0, s.out(outCard{ID: id, Status: "ready"}), "")
}

// claim writes a claim line at ms (unless skip) and its call, acknowledged
// at ms+1 with the card printed as the claim left it.
func (s *story) claim(ms float64, id, owner string, epoch int64, ttl time.Duration, rid string) {
	s.line(ms, ledger.Event{Op: ledger.OpClaim, Card: id, RequestID: rid, Owner: owner, Epoch: epoch, TTLSeconds: int64(ttl / time.Second), ExpectVersion: s.version(id)})
	s.ackClaim(ms, id, owner, epoch, ttl, rid)
}

// ackClaim records an acknowledged claim without writing its line.
func (s *story) ackClaim(ms float64, id, owner string, epoch int64, ttl time.Duration, rid string) {
	at, exp := s.at(ms), s.at(ms).Add(ttl)
	s.call(ms-1, ms+1, Call{Op: "claim", Owner: owner, RequestID: rid}, 0,
		s.out(outCard{ID: id, Status: "claimed", ClaimOwner: owner, ClaimEpoch: epoch, ClaimedAt: &at, LeaseExpiresAt: &exp}), "")
}

// heartbeat writes a heartbeat line and its acknowledged call.
func (s *story) heartbeat(ms float64, id, owner string, epoch int64, ttl time.Duration, rid string) {
	s.line(ms, ledger.Event{Op: ledger.OpHeartbeat, Card: id, RequestID: rid, Owner: owner, Epoch: epoch})
	exp := s.at(ms).Add(ttl)
	s.call(ms-1, ms+1, Call{Op: "heartbeat", Card: id, Owner: owner, Epoch: epoch, RequestID: rid}, 0,
		s.out(outCard{ID: id, Status: "claimed", ClaimOwner: owner, ClaimEpoch: epoch, LeaseExpiresAt: &exp}), "")
}

// end writes a complete or release line and its acknowledged call.
func (s *story) end(ms float64, op ledger.Op, id, owner string, epoch int64, rid string) {
	s.line(ms, ledger.Event{Op: op, Card: id, RequestID: rid, Owner: owner, Epoch: epoch})
	status := "done"
	if op == ledger.OpRelease {
		status = "ready"
	}
	s.call(ms-1, ms+1, Call{Op: string(op), Card: id, Owner: owner, Epoch: epoch, RequestID: rid}, 0, s.out(outCard{ID: id, Status: status}), "")
}

// refused records a call that wrote nothing and exited with code and the
// JSON error code.
func (s *story) refused(start, end float64, c Call, exit int, code string) {
	s.call(start, end, c, exit, "", fmt.Sprintf(`{"error":"refused","code":%q,"exit_code":%d}`, code, exit))
}

func (s *story) call(start, end float64, c Call, exit int, stdout, stderr string) {
	c.Start, c.End, c.Exit = s.at(start), s.at(end), exit
	c.Stdout, c.Stderr = []byte(stdout), []byte(stderr)
	if c.Worker == "" {
		c.Worker = c.Owner
	}
	c.Args = []string{c.Op, "--id", c.Card}
	s.calls = append(s.calls, c)
}

func (s *story) out(c outCard) string {
	b, err := json.Marshal(c)
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// version is the card's version as the fold has it after the lines so far.
func (s *story) version(id string) int64 {
	c, _ := ledger.Fold(s.events).Card(id)
	return c.Version
}

func (s *story) history(allDone bool) History {
	return History{Calls: s.calls, Ledger: s.ledger, Cards: s.cards, AllDone: allDone}
}

// expect checks that exactly the given kinds were reported (each at least
// once) and logs what was found.
func expect(t *testing.T, r Report, kinds ...Kind) {
	t.Helper()
	want := map[Kind]bool{}
	for _, k := range kinds {
		want[k] = true
		if r.Count(k) == 0 {
			t.Errorf("checker missed %s", k)
		}
	}
	for _, v := range r.Violations {
		if !want[v.Kind] {
			t.Errorf("unexpected violation %s", v)
		} else {
			t.Logf("checker caught: %s", v)
		}
	}
}

const sec = time.Second

// A clean run: claim, heartbeat, expiry, re-claim by another owner, the
// paused owner fenced, completion; nothing to report.
func TestCheckCleanHistory(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.create(10, "C2")
	s.claim(100, "C1", "w1", 1, sec, "r1")
	s.heartbeat(600, "C1", "w1", 1, sec, "r2") // lease now runs to 1600
	s.claim(1700, "C1", "w2", 2, sec, "r3")    // after expiry
	s.refused(1800, 1805, Call{Op: "heartbeat", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r4"}, 4, "fenced")
	s.refused(1810, 1815, Call{Op: "complete", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r5"}, 4, "fenced")
	s.end(1900, ledger.OpComplete, "C1", "w2", 2, "r6")
	s.claim(2000, "C2", "w1", 1, sec, "r7")
	s.end(2100, ledger.OpRelease, "C2", "w1", 1, "r8")
	s.claim(2200, "C2", "w3", 2, sec, "r9") // right after the release
	s.end(2300, ledger.OpComplete, "C2", "w3", 2, "r10")
	s.call(2400, 2405, Call{Op: "claim", Owner: "w1", RequestID: "r11"}, 0, "null", "")
	s.refused(2500, 2505, Call{Op: "claim", Owner: "w4", RequestID: "r12"}, 5, "lock_timeout")
	s.call(2600, 2605, Call{Op: "list"}, 0, "[]", "")
	r := Check(s.history(true))
	expect(t, r)
	if r.Stale != 2 || r.Fenced != 2 || r.Claims != 4 {
		t.Errorf("stale=%d fenced=%d claims=%d, want 2 2 4", r.Stale, r.Fenced, r.Claims)
	}
	t.Log(r.Summary())
}

// Two agents told they won the same card at the same epoch: what a missing
// lock allows. The ledger holds both claims; the fold rejects the second.
func TestCheckDoubleClaim(t *testing.T) {
	s := newStory(t)
	s.create(0, "C3")
	s.claim(100, "C3", "w1", 1, sec, "r1")
	s.line(100.5, ledger.Event{Op: ledger.OpClaim, Card: "C3", RequestID: "r2", Owner: "w4", Epoch: 1, TTLSeconds: 1, ExpectVersion: 1})
	s.ackClaim(100.5, "C3", "w4", 1, sec, "r2")
	r := Check(s.history(false))
	expect(t, r, KindDoubleClaim, KindEpochSequence, KindFoldConflict, KindLeaseOverlap)
	if v := r.Violations; !strings.Contains(fmt.Sprint(v), "epoch 1 claimed by w1") || !strings.Contains(fmt.Sprint(v), "and w4") {
		t.Errorf("double claim not named: %v", v)
	}
}

// A double claim the ledger does not even show: the second claim was
// acknowledged but its line is gone.
func TestCheckDoubleClaimLostLine(t *testing.T) {
	s := newStory(t)
	s.create(0, "C3")
	s.claim(100, "C3", "w1", 1, sec, "r1")
	s.ackClaim(101, "C3", "w4", 1, sec, "r2")
	r := Check(s.history(false))
	expect(t, r, KindDoubleClaim, KindLostAck, KindLeaseOverlap)
}

// Claim epochs that skip or repeat.
func TestCheckEpochSequence(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.line(100, ledger.Event{Op: ledger.OpClaim, Card: "C1", Owner: "w1", Epoch: 2, TTLSeconds: 1, ExpectVersion: 1})
	r := Check(s.history(false))
	expect(t, r, KindEpochSequence, KindFoldConflict)
}

// A second owner's lease starts while the first owner's, extended by a
// heartbeat, still runs. Epochs rise by one, so only the lease times show it.
func TestCheckLeaseOverlap(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.claim(100, "C1", "w1", 1, sec, "r1")
	s.heartbeat(900, "C1", "w1", 1, sec, "r2") // runs to 1900
	s.line(1500, ledger.Event{Op: ledger.OpClaim, Card: "C1", RequestID: "r3", Owner: "w2", Epoch: 2, TTLSeconds: 1, ExpectVersion: 3})
	s.ackClaim(1500, "C1", "w2", 2, sec, "r3")
	r := Check(s.history(false))
	expect(t, r, KindLeaseOverlap, KindFoldConflict)
	if !strings.Contains(r.Violations[len(r.Violations)-1].String()+fmt.Sprint(r.Violations), "w1 epoch 1") {
		t.Errorf("overlap does not name w1 epoch 1: %v", r.Violations)
	}
}

// A release ends a lease early, so a claim right after it does not overlap.
// The same owner re-claiming its own live lease is not an overlap either.
func TestCheckLeaseEndsAtRelease(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.claim(100, "C1", "w1", 1, 10*sec, "r1")
	s.claim(200, "C1", "w1", 2, 10*sec, "r2") // re-claim of its own lease
	s.end(300, ledger.OpRelease, "C1", "w1", 2, "r3")
	s.claim(400, "C1", "w2", 3, 10*sec, "r4")
	r := Check(s.history(false))
	expect(t, r)
}

// An acknowledged event missing from the ledger.
func TestCheckLostAck(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.call(10, 20, Call{Op: "create", Card: "C9", RequestID: "r9"}, 0, s.out(outCard{ID: "C9", Status: "ready"}), "")
	s.claim(100, "C1", "w1", 1, sec, "r1")
	s.call(200, 210, Call{Op: "complete", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r2"}, 0, s.out(outCard{ID: "C1", Status: "done"}), "")
	r := Check(s.history(false))
	expect(t, r, KindLostAck)
	if r.Count(KindLostAck) != 2 {
		t.Errorf("want 2 lost acks, got %d", r.Count(KindLostAck))
	}
}

// A killed call is not acknowledged: its line may or may not be there.
func TestCheckKilledIsNotAcked(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.line(100, ledger.Event{Op: ledger.OpClaim, Card: "C1", RequestID: "r1", Owner: "w1", Epoch: 1, TTLSeconds: 1, ExpectVersion: 1})
	s.call(99, 101, Call{Op: "claim", Owner: "w1", RequestID: "r1"}, -1, "", "")
	s.call(150, 160, Call{Op: "create", Card: "C2", RequestID: "r2"}, -1, "", "")
	// The retry of r1 replays it.
	at, exp := s.at(100), s.at(1100)
	s.call(200, 210, Call{Op: "claim", Owner: "w1", RequestID: "r1"}, 0, s.out(outCard{ID: "C1", Status: "claimed", ClaimOwner: "w1", ClaimEpoch: 1, ClaimedAt: &at, LeaseExpiresAt: &exp}), "")
	r := Check(s.history(false))
	expect(t, r)
	if r.Killed != 2 || r.Claims != 1 {
		t.Errorf("killed=%d claims=%d, want 2 1", r.Killed, r.Claims)
	}
}

// A claim that printed something other than what its line holds.
func TestCheckAckMismatch(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.line(100, ledger.Event{Op: ledger.OpClaim, Card: "C1", RequestID: "r1", Owner: "w1", Epoch: 1, TTLSeconds: 1, ExpectVersion: 1})
	at, exp := s.at(100), s.at(1100)
	s.call(99, 101, Call{Op: "claim", Owner: "w1", RequestID: "r1"}, 0, s.out(outCard{ID: "C1", Status: "claimed", ClaimOwner: "w2", ClaimEpoch: 2, ClaimedAt: &at, LeaseExpiresAt: &exp}), "")
	r := Check(s.history(false))
	expect(t, r, KindAckMismatch)
}

// A paused owner comes back after another owner's claim was acknowledged:
// its heartbeat must be refused as fenced and must not reach the ledger.
func TestCheckStaleAccepted(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.claim(100, "C1", "w1", 1, sec, "r1")
	s.claim(1200, "C1", "w2", 2, sec, "r2")
	s.heartbeat(1300, "C1", "w1", 1, sec, "r3") // accepted and written: wrong
	r := Check(s.history(false))
	expect(t, r, KindStaleAccepted, KindStaleInLedger, KindFoldConflict, KindLeaseOverlap)
}

// A stale owner refused, but with the wrong code, or with an exit code that
// is no refusal.
func TestCheckStaleNotFenced(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.claim(100, "C1", "w1", 1, sec, "r1")
	s.claim(1200, "C1", "w2", 2, sec, "r2")
	s.end(1300, ledger.OpComplete, "C1", "w2", 2, "r3")
	s.refused(1400, 1405, Call{Op: "complete", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r4"}, 4, "conflict")
	s.refused(1410, 1415, Call{Op: "release", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r5"}, 1, "error")
	// Killed or timed out: no answer to judge.
	s.call(1420, 1425, Call{Op: "heartbeat", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r6"}, -1, "", "")
	s.refused(1430, 1435, Call{Op: "heartbeat", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r7"}, 5, "lock_timeout")
	r := Check(s.history(true))
	expect(t, r, KindStaleNotFenced, KindUnexpectedExit)
	if r.Count(KindStaleNotFenced) != 2 || r.Stale != 4 || r.Fenced != 0 {
		t.Errorf("stale-not-fenced=%d stale=%d fenced=%d, want 2 4 0", r.Count(KindStaleNotFenced), r.Stale, r.Fenced)
	}
}

// A stale owner whose refused request still left a line.
func TestCheckStaleInLedger(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.claim(100, "C1", "w1", 1, sec, "r1")
	s.claim(1200, "C1", "w2", 2, sec, "r2")
	s.line(1300, ledger.Event{Op: ledger.OpRelease, Card: "C1", RequestID: "r3", Owner: "w1", Epoch: 1})
	s.refused(1299, 1301, Call{Op: "release", Card: "C1", Owner: "w1", Epoch: 1, RequestID: "r3"}, 4, "fenced")
	r := Check(s.history(false))
	expect(t, r, KindStaleInLedger, KindFoldConflict)
}

// A finished workload with a card completed twice and one never.
func TestCheckDoneCount(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.create(1, "C2")
	s.end(100, ledger.OpComplete, "C1", "", 0, "r1")
	s.line(200, ledger.Event{Op: ledger.OpComplete, Card: "C1", RequestID: "r2"})
	r := Check(s.history(true))
	expect(t, r, KindDoneCount, KindFoldConflict)
	if r.Count(KindDoneCount) != 2 {
		t.Errorf("want 2 done-count violations: %v", r.Violations)
	}
}

// One request id on two lines.
func TestCheckDuplicateRequest(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	title := "again"
	s.line(100, ledger.Event{Op: ledger.OpUpdate, Card: "C1", RequestID: "create-C1", Fields: &ledger.Fields{Title: &title}})
	r := Check(s.history(false))
	expect(t, r, KindDuplicateRequest)
}

// Damage mid-file is reported; a torn final line is not.
func TestCheckCorruptAndTorn(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.create(1, "C2")
	s.create(2, "C3")
	clean := append([]byte(nil), s.ledger...)
	s.ledger = append(s.ledger, `{"v":1,"id":"tor`...)
	r := Check(s.history(false))
	expect(t, r)
	if r.TornBytes != len(`{"v":1,"id":"tor`) || r.Events != 3 {
		t.Errorf("torn=%d events=%d", r.TornBytes, r.Events)
	}

	s.ledger = append([]byte(nil), clean...)
	i := strings.Index(string(s.ledger), `"card":"C2"`)
	s.ledger[i+9] = 'X'
	r = Check(s.history(false))
	expect(t, r, KindCorrupt, KindLostAck)
	if !strings.Contains(fmt.Sprint(r.Violations), "line 2") {
		t.Errorf("damage not located at line 2: %v", r.Violations)
	}
}

// Lines out of (at, id) order, e.g. a duplicated line.
func TestCheckOrder(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.create(1, "C2")
	first := s.ledger[:strings.IndexByte(string(s.ledger), '\n')+1]
	s.ledger = append(s.ledger, first...)
	r := Check(s.history(false))
	expect(t, r, KindOrder, KindDuplicateRequest, KindFoldConflict)
}

// One request acknowledged before another started, yet written after it.
func TestCheckAckOrder(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	title := "x"
	s.line(300, ledger.Event{Op: ledger.OpUpdate, Card: "C1", RequestID: "late", Fields: &ledger.Fields{Title: &title}})
	s.line(400, ledger.Event{Op: ledger.OpUpdate, Card: "C1", RequestID: "early", Fields: &ledger.Fields{Title: &title}})
	s.call(100, 150, Call{Op: "update", Card: "C1", RequestID: "early"}, 0, s.out(outCard{ID: "C1"}), "")
	s.call(200, 250, Call{Op: "update", Card: "C1", RequestID: "late"}, 0, s.out(outCard{ID: "C1"}), "")
	r := Check(s.history(false))
	expect(t, r, KindAckOrder)
}

// Exit codes no situation in a workload allows.
func TestCheckUnexpectedExit(t *testing.T) {
	s := newStory(t)
	s.create(0, "C1")
	s.refused(10, 20, Call{Op: "claim", Owner: "w1", RequestID: "r1"}, 1, "error")
	s.refused(30, 40, Call{Op: "list"}, 6, "corrupt")
	s.refused(50, 60, Call{Op: "claim", Owner: "w1", RequestID: "r2"}, 4, "usage")
	s.call(70, 80, Call{Op: "claim", Owner: "w1", RequestID: "r3"}, 0, "not json", "")
	r := Check(s.history(false))
	expect(t, r, KindUnexpectedExit)
	if r.Count(KindUnexpectedExit) != 4 {
		t.Errorf("want 4 unexpected exits: %v", r.Violations)
	}
}
