package wire

import (
	"fmt"
	"time"

	json "github.com/goccy/go-json"
)

// The histories the tests of wire and of the packages above it share (as
// restic's packages export their testing.go): one copy, so that a new
// field or op is added to every test that folds them at once. Nothing in
// bl calls them; the linker leaves them out of the binaries.

// fixtureStart is when the fixtures' events start.
var fixtureStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// SnapshotEvents is a history whose cards between them have every card
// field set and unset, with receipts for its request ids and one conflict.
func SnapshotEvents() []*Event {
	h := &fixtureHistory{at: fixtureStart}
	h.leaseCards()
	h.plannedCards()
	return h.evs
}

// fixtureSourceAt is an imported card's times in its tracker: a function,
// not a variable, as this file is linked into bl and a zone built at load
// would cost every call's start-up (TestStartupBudget).
func fixtureSourceAt() time.Time {
	return time.Date(2019, 3, 4, 5, 6, 7, 123000000, time.FixedZone("", -8*3600))
}

// fixtureHistory is a history being written: each event gets the next id
// and a time 1.234567 ms after the one before, alice as its actor unless
// it names one, and a request id on two events of three.
type fixtureHistory struct {
	evs []*Event
	at  time.Time
	n   int
}

func (h *fixtureHistory) add(e *Event) {
	h.at = h.at.Add(1234567 * time.Nanosecond)
	h.n++
	e.V, e.ID, e.At = 1, fmt.Sprintf("%016x", h.n), h.at
	if e.Actor == "" {
		e.Actor = "alice@host"
	}
	if h.n%3 != 0 {
		e.RequestID = fmt.Sprintf("req-%d-\"é\"", h.n)
	}
	h.evs = append(h.evs, e)
}

// leaseCards are a card with every field, and cards through the lease's
// life: claimed, heartbeating with a checkpoint, blocked, done, reopened,
// out of attempts.
func (h *fixtureHistory) leaseCards() {
	deferUntil := fixtureStart.Add(72 * time.Hour)
	srcAt := fixtureSourceAt()
	title := `Fix "quoted" title \ path/to`
	body := "line 1\nline 2\ttabbed\r\n<b>é ✓ 😀</b>\u2028\x01 & <script>"
	h.add(&Event{Op: OpCreate, Card: "A", Fields: &Fields{Title: fixtureStr("a")}})
	h.add(&Event{Op: OpCreate, Card: "every-field", Fields: &Fields{Title: &title, Body: &body, Phase: fixtureStr("M1"), Priority: fixtureInt(-3),
		Labels: fixtureStrs("api", "ui", "é"), DependsOn: fixtureStrs("A"), Parent: fixtureStr("A"), Acceptance: fixtureStrs(`returns 200 for "GET /cards"`, "x"),
		MaxAttempts: fixtureInt(2), DeferUntil: &deferUntil, IdempotencyKey: "idem-1", Assignee: fixtureStr("bob \"b\" é"),
		SourceCreatedAt: &srcAt, SourceUpdatedAt: &srcAt, SourceClosedAt: &srcAt}})
	h.add(&Event{Op: OpCreate, Card: "claimed", Fields: &Fields{Title: fixtureStr("claimed card"), Labels: fixtureStrs("x"), Priority: fixtureInt(2)}})
	h.add(&Event{Op: OpClaim, Card: "claimed", Owner: "agent-7", TTLSeconds: 600, ExpectVersion: 1, Epoch: 1})
	h.add(&Event{Op: OpCreate, Card: "beating", Fields: &Fields{Title: fixtureStr("beating card")}})
	h.add(&Event{Op: OpClaim, Card: "beating", Owner: "agent-8", TTLSeconds: 60, ExpectVersion: 1, Epoch: 1})
	h.add(&Event{Op: OpHeartbeat, Card: "beating", Owner: "agent-8", Epoch: 1, Progress: fixtureInt(40),
		Checkpoint: json.RawMessage(`{"step":"build","n":[1,-2.5e3,0.25,true,false,null],"s":"x\"\\\u00e9\ud83d\ude00","o":{}}`)})
	h.add(&Event{Op: OpCreate, Card: "blocked", Fields: &Fields{Title: fixtureStr("blocked card")}})
	h.add(&Event{Op: OpBlock, Card: "blocked", Reason: "waiting on \"vendor\""})
	h.add(&Event{Op: OpCreate, Card: "done", Fields: &Fields{Title: fixtureStr("done card"), Acceptance: fixtureStrs("a", "b")}})
	h.add(&Event{Op: OpClaim, Card: "done", Owner: "w", TTLSeconds: 600, ExpectVersion: 1, Epoch: 1})
	h.add(&Event{Op: OpHeartbeat, Card: "done", Owner: "w", Epoch: 1, Progress: fixtureInt(0), Checkpoint: json.RawMessage(`"s"`)})
	h.add(&Event{Op: OpComplete, Card: "done", Owner: "w", Epoch: 1, Reason: "shipped ✓"})
	h.add(&Event{Op: OpCreate, Card: "reopened", Fields: &Fields{Title: fixtureStr("reopened card")}})
	h.add(&Event{Op: OpComplete, Card: "reopened"})
	h.add(&Event{Op: OpReopen, Card: "reopened"})
	h.add(&Event{Op: OpCreate, Card: "exhausted", Fields: &Fields{Title: fixtureStr("exhausted"), MaxAttempts: fixtureInt(1)}})
	h.add(&Event{Op: OpClaim, Card: "exhausted", Owner: "w", TTLSeconds: 1, ExpectVersion: 1, Epoch: 1})
	h.add(&Event{Op: OpRelease, Card: "exhausted", Owner: "w", Epoch: 1})
}

// plannedCards are cards with links, notes (one imported), an update of a
// missing card (the conflict), a failure with back-off, a deletion, a
// child and a rejected review.
func (h *fixtureHistory) plannedCards() {
	srcAt := fixtureSourceAt()
	h.add(&Event{Op: OpCreate, Card: "linked", Fields: &Fields{Title: fixtureStr("linked")}})
	h.add(&Event{Op: OpLink, Card: "linked", To: "A"})
	h.add(&Event{Op: OpLink, Card: "linked", To: "done"})
	h.add(&Event{Op: OpUpdate, Card: "linked", Fields: &Fields{Body: fixtureStr("now with a body"), Labels: fixtureStrs("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q")}})
	h.add(&Event{Op: OpUpdate, Card: "missing", Fields: &Fields{Title: fixtureStr("no such card")}}) // a conflict
	h.add(&Event{Op: OpNote, Card: "linked", Text: "tried \"x\"; see log\nnext: é ✓"})
	h.add(&Event{Op: OpNote, Card: "linked", Text: "imported comment", SourceAt: &srcAt})
	h.add(&Event{Op: OpNote, Card: "claimed", Owner: "agent-7", Epoch: 1, Text: "half way"})
	h.add(&Event{Op: OpCreate, Card: "failing", Fields: &Fields{Title: fixtureStr("failing"), MaxAttempts: fixtureInt(2)}})
	h.add(&Event{Op: OpClaim, Card: "failing", Owner: "w", TTLSeconds: 60, ExpectVersion: 1, Epoch: 1})
	h.add(&Event{Op: OpFail, Card: "failing", Owner: "w", Epoch: 1, Reason: "exit status 1", BackoffSeconds: 30, BackoffMaxSeconds: 3600})
	h.add(&Event{Op: OpLink, Card: "linked", To: "failing", LinkType: LinkDuplicates})
	h.add(&Event{Op: OpLink, Card: "linked", To: "reopened", LinkType: LinkRelated})
	h.add(&Event{Op: OpCreate, Card: "gone", Fields: &Fields{Title: fixtureStr("deleted card")}})
	h.add(&Event{Op: OpCreate, Card: "kid", Fields: &Fields{Title: fixtureStr("a child"), Parent: fixtureStr("linked")}})
	h.add(&Event{Op: OpDelete, Card: "gone", Reason: "a \"duplicate\""})
	h.add(&Event{Op: OpCreate, Card: "reviewed", Fields: &Fields{Title: fixtureStr("reviewed"), Paths: fixtureStrs("src/lexer/**", "docs/*.md")}})
	h.add(&Event{Op: OpClaim, Card: "reviewed", Owner: "w", TTLSeconds: 60, ExpectVersion: 1, Epoch: 1})
	h.add(&Event{Op: OpReview, Card: "reviewed", Owner: "w", Epoch: 1, Commit: "4f2a9c1", Branch: "bl/reviewed"})
	h.add(&Event{Op: OpReject, Card: "reviewed", Actor: "bob@host", Epoch: 1, Reason: "needs a \"test\""})
}

// BenchEvents is a realistic history: cards created, claimed, heartbeated,
// completed, with some of them linked.
func BenchEvents(cards int) []*Event {
	var evs []*Event
	at := fixtureStart
	n := 0
	add := func(e *Event) {
		at = at.Add(time.Millisecond)
		n++
		e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", n), at, "bench"
		evs = append(evs, e)
	}
	for i := 0; i < cards; i++ {
		id := fmt.Sprintf("card-%06d", i)
		add(&Event{Op: OpCreate, Card: id, Fields: &Fields{Title: fixtureStr("a card title of some length"), Priority: fixtureInt(i % 7), Labels: fixtureStrs("x", "y")}})
		if i > 0 && i%5 == 0 {
			add(&Event{Op: OpLink, Card: id, To: fmt.Sprintf("card-%06d", i-1)})
		}
	}
	for i := 0; i < cards; i++ {
		id := fmt.Sprintf("card-%06d", i)
		v := int64(1)
		if i > 0 && i%5 == 0 {
			v = 2
		}
		add(&Event{Op: OpClaim, Card: id, Owner: "w", TTLSeconds: 600, ExpectVersion: v, Epoch: 1})
		add(&Event{Op: OpHeartbeat, Card: id, Owner: "w", Epoch: 1, Progress: fixtureInt(50)})
		add(&Event{Op: OpComplete, Card: id, Owner: "w", Epoch: 1})
	}
	return evs
}

func fixtureInt(v int) *int             { return &v }
func fixtureStr(v string) *string       { return &v }
func fixtureStrs(v ...string) *[]string { return &v }

// DumpSnapshotLine shows a line's value for failure messages: as JSON, with
// the time zones, which JSON leaves out.
func DumpSnapshotLine(l SnapshotLine) string {
	b, _ := json.Marshal(l)
	out := string(b)
	if c := l.Card; c != nil {
		out += fmt.Sprintf(" checkpoint=%q labels.nil=%v depends_on.nil=%v acceptance.nil=%v", []byte(c.Checkpoint), c.Labels == nil, c.DependsOn == nil, c.Acceptance == nil)
		for name, ts := range map[string]*time.Time{"claimed_at": c.ClaimedAt, "lease_expires_at": c.LeaseExpiresAt, "last_heartbeat_at": c.LastHeartbeatAt,
			"defer_until": c.DeferUntil, "closed_at": c.ClosedAt, "created_at": &c.CreatedAt, "updated_at": &c.UpdatedAt} {
			if ts != nil {
				out += fmt.Sprintf(" %s.loc=%q", name, ts.Location())
			}
		}
	}
	if r := l.Receipt; r != nil {
		out += fmt.Sprintf(" at.loc=%q", r.At.Location())
	}
	return out
}
