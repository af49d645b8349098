package proof

import "fmt"

// Kind names a broken promise.
type Kind string

// The violations Check can report.
const (
	// The ledger has a damaged line that is not a torn final line.
	KindCorrupt Kind = "corrupt-ledger"
	// Ledger lines are not in strictly increasing (at, id) order.
	KindOrder Kind = "ledger-order"
	// The fold of the final ledger rejects an event: a writer appended an
	// event whose compare-and-swap did not hold.
	KindFoldConflict Kind = "fold-conflict"
	// A request id appears on more than one ledger line.
	KindDuplicateRequest Kind = "duplicate-request"
	// A card's claim events in the ledger do not carry epochs 1, 2, 3, ...
	KindEpochSequence Kind = "epoch-sequence"
	// Two different requests were told they claimed one card at one epoch.
	KindDoubleClaim Kind = "double-claim"
	// Two owners held unexpired leases on one card at the same time.
	KindLeaseOverlap Kind = "lease-overlap"
	// An acknowledged mutation is not in the final ledger.
	KindLostAck Kind = "lost-ack"
	// An acknowledged result disagrees with the event the ledger holds for
	// its request.
	KindAckMismatch Kind = "ack-mismatch"
	// An acknowledged mutation's ledger line comes before that of a
	// mutation that had already been acknowledged when it started.
	KindAckOrder Kind = "ack-order"
	// A stale owner's heartbeat, complete or release succeeded.
	KindStaleAccepted Kind = "stale-accepted"
	// A stale owner's heartbeat, complete or release was refused, but not
	// with exit 4 and code "fenced".
	KindStaleNotFenced Kind = "stale-not-fenced"
	// A stale owner's request made it into the ledger.
	KindStaleInLedger Kind = "stale-in-ledger"
	// A card of a finished workload was not completed exactly once.
	KindDoneCount Kind = "done-count"
	// A process exited with a code the situation does not allow (1, 2, 3,
	// 6, or a conflict on a read), or printed output that does not parse.
	KindUnexpectedExit Kind = "unexpected-exit"
)

// Safety reports whether the kind breaks one of the lease or durability
// guarantees (as opposed to a wrong exit code or message). A damaged or
// misordered ledger counts: bl refuses to open it, so every acknowledged
// event in it is out of reach.
func (k Kind) Safety() bool {
	switch k {
	case KindCorrupt, KindOrder, KindFoldConflict, KindDuplicateRequest, KindEpochSequence, KindDoubleClaim,
		KindLeaseOverlap, KindLostAck, KindAckOrder, KindStaleAccepted, KindStaleInLedger, KindDoneCount:
		return true
	}
	return false
}

// Violation is one broken promise, with the card it concerns.
type Violation struct {
	Kind   Kind
	Card   string
	Detail string
}

func (v Violation) String() string {
	if v.Card == "" {
		return fmt.Sprintf("%s: %s", v.Kind, v.Detail)
	}
	return fmt.Sprintf("%s: card %s: %s", v.Kind, v.Card, v.Detail)
}

// Report is Check's verdict and what it looked at.
type Report struct {
	Violations []Violation

	Calls     int // processes run
	Killed    int // of which died of a signal
	Stopped   int // of which were SIGSTOPped for a while
	Timeouts  int // of which gave up waiting for the lock (exit 5)
	Acked     int // mutations acknowledged (exit 0, something written or replayed)
	Claims    int // claims acknowledged
	Stale     int // heartbeats, completes and releases sent by an owner already replaced
	Fenced    int // of which were refused with exit 4, code "fenced"
	Events    int // good lines in the final ledger
	TornBytes int // bytes of a torn final line in the final ledger
}

// Safety returns the violations of lease or durability guarantees.
func (r *Report) Safety() []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Kind.Safety() {
			out = append(out, v)
		}
	}
	return out
}

// Count returns how many violations of kind k were found.
func (r *Report) Count(k Kind) int {
	n := 0
	for _, v := range r.Violations {
		if v.Kind == k {
			n++
		}
	}
	return n
}

// Summary is one line of counts for a test log.
func (r *Report) Summary() string {
	return fmt.Sprintf("processes=%d killed=%d stopped=%d lock-timeouts=%d acked=%d claims=%d stale=%d fenced=%d events=%d violations=%d",
		r.Calls, r.Killed, r.Stopped, r.Timeouts, r.Acked, r.Claims, r.Stale, r.Fenced, r.Events, len(r.Violations))
}

func (r *Report) add(k Kind, card, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Kind: k, Card: card, Detail: fmt.Sprintf(format, args...)})
}
