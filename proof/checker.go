package proof

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// acked is what one request id got back, over all its attempts.
type acked struct {
	call  *Call     // the attempt that exited 0
	first time.Time // start of the first attempt
	out   *outCard  // the card printed; nil for null
	line  int       // index into good ledger lines; -1 when absent
}

func isRead(op string) bool {
	switch op {
	case "list", "show", "stats", "ready", "version", "log", "export":
		return true
	}
	return false
}

// fencedOp reports whether op is one of the owner operations a lease fences.
func fencedOp(op string) bool {
	return op == "heartbeat" || op == "complete" || op == "release"
}

// lease is one claim as the agent that got it understood it, from the
// acknowledged claim and heartbeats, cut short where the ledger ends it.
type lease struct {
	card, owner, rid string
	epoch            int64
	start, end       time.Time
}

// checking is one Check under way: the history, the final ledger read
// once, and what each pass leaves for the later ones. Each pass is one
// promise of the contract, so a violation names the pass that found it.
type checking struct {
	r      *Report
	h      History
	good   []LedgerLine
	events []*ledger.Event
	state  *ledger.State
	byReq  map[string][]int // request id → indexes into events
	acks   map[string]*acked
}

// Check judges a history. It reads nothing but its argument.
func Check(h History) Report {
	r := Report{Calls: len(h.Calls)}
	c := &checking{r: &r, h: h}
	c.readLedger()
	c.duplicateRequests()
	c.claimEpochs()
	c.readCalls()
	c.acksInLedger()
	c.doubleClaims()
	r.checkLeases(c.acks, c.events)
	c.staleOwners()
	c.allDone()
	c.ackOrder()
	return r
}

// readLedger parses the final ledger and checks its integrity and order,
// and that it folds without conflicts.
func (c *checking) readLedger() {
	r := c.r
	good, damaged, torn := ParseLedger(c.h.Ledger)
	r.Events, r.TornBytes = len(good), torn
	for _, l := range damaged {
		r.add(KindCorrupt, "", "line %d (offset %d) is damaged with good lines after it: %v", l.No, l.Offset, l.Err)
	}
	events := make([]*ledger.Event, len(good))
	for i, l := range good {
		events[i] = l.Event
		if i > 0 {
			p := good[i-1].Event
			if o := p.At.Compare(l.Event.At); o > 0 || (o == 0 && p.ID >= l.Event.ID) {
				r.add(KindOrder, l.Event.Card, "line %d (%s %s at %s) is not after line %d (%s %s at %s)",
					l.No, l.Event.Op, l.Event.ID, l.Event.At.Format(time.RFC3339Nano),
					good[i-1].No, p.Op, p.ID, p.At.Format(time.RFC3339Nano))
			}
		}
	}
	c.good, c.events = good, events
	c.state = ledger.Fold(events)
	for _, f := range c.state.Conflicts() {
		r.add(KindFoldConflict, f.Card, "%s event %s by %s at %s does not hold when folded: %s", f.Op, f.Event, f.Actor, f.At, f.Reason)
	}
}

// duplicateRequests indexes the ledger by request id and reports an id
// written more than once: a retried write must not land twice.
func (c *checking) duplicateRequests() {
	c.byReq = map[string][]int{}
	for i, e := range c.events {
		if e.RequestID != "" {
			c.byReq[e.RequestID] = append(c.byReq[e.RequestID], i)
		}
	}
	for _, rid := range sortedKeys(c.byReq) {
		if idx := c.byReq[rid]; len(idx) > 1 {
			lines := make([]string, len(idx))
			for j, i := range idx {
				lines[j] = fmt.Sprint(c.good[i].No)
			}
			c.r.add(KindDuplicateRequest, c.events[idx[0]].Card, "request %s is on lines %s", rid, strings.Join(lines, ", "))
		}
	}
}

// claimEpochs checks that each card's claims, in ledger order, count
// their epochs 1, 2, 3 without a gap or a repeat.
func (c *checking) claimEpochs() {
	lastEpoch := map[string]int64{}
	lastLine := map[string]int{}
	for i, e := range c.events {
		if e.Op != ledger.OpClaim {
			continue
		}
		if want := lastEpoch[e.Card] + 1; e.Epoch != want {
			prev := "no earlier claim"
			if n, ok := lastLine[e.Card]; ok {
				prev = fmt.Sprintf("line %d has epoch %d", n, lastEpoch[e.Card])
			}
			c.r.add(KindEpochSequence, e.Card, "claim by %s on line %d has epoch %d, want %d (%s)", e.Owner, c.good[i].No, e.Epoch, want, prev)
		}
		lastEpoch[e.Card], lastLine[e.Card] = e.Epoch, c.good[i].No
	}
}

// readCalls counts the calls, checks each exit code, and records what
// each request id was acknowledged with (its first answer) and where the
// ledger holds it.
func (c *checking) readCalls() {
	r := c.r
	c.acks = map[string]*acked{}
	firstStart := map[string]time.Time{}
	for i := range c.h.Calls {
		call := &c.h.Calls[i]
		if call.RequestID != "" {
			if t, ok := firstStart[call.RequestID]; !ok || call.Start.Before(t) {
				firstStart[call.RequestID] = call.Start
			}
		}
		r.tally(call)
		if !call.Killed() && !allowedExit(call) {
			r.add(KindUnexpectedExit, call.Card, "%s %s exited %d: %s", call.Worker, strings.Join(call.Args, " "), call.Exit, bytes.TrimSpace(call.Stderr))
			continue
		}
		if call.Exit != 0 || isRead(call.Op) || call.RequestID == "" {
			continue
		}
		out, err := parseOut(call.Stdout)
		if err != nil {
			r.add(KindUnexpectedExit, call.Card, "%s %s exited 0 but printed %q: %v", call.Worker, strings.Join(call.Args, " "), call.Stdout, err)
			continue
		}
		if _, ok := c.acks[call.RequestID]; ok {
			// A retry answered after an earlier attempt was already
			// acknowledged: keep the first answer.
			continue
		}
		c.acks[call.RequestID] = &acked{call: call, out: out, line: -1}
	}
	for rid, a := range c.acks {
		a.first = firstStart[rid]
		if idx := c.byReq[rid]; len(idx) > 0 {
			a.line = idx[0]
		}
	}
}

// tally counts a call that was killed, timed out on the lock, or stopped.
func (r *Report) tally(c *Call) {
	switch {
	case c.Killed():
		r.Killed++
	case c.Exit == 5:
		r.Timeouts++
	}
	if c.Stopped {
		r.Stopped++
	}
}

// acksInLedger checks that every acknowledged mutation is in the ledger,
// as acknowledged.
func (c *checking) acksInLedger() {
	r := c.r
	for _, rid := range sortedKeys(c.acks) {
		a := c.acks[rid]
		call := a.call
		if a.out == nil {
			if a.line >= 0 {
				r.add(KindAckMismatch, call.Card, "%s was told %s %s found nothing (null), but line %d holds it", call.Worker, call.Op, rid, c.good[a.line].No)
			}
			continue
		}
		r.Acked++
		if a.line < 0 {
			r.add(KindLostAck, a.out.ID, "%s %s (request %s) by %s exited 0 at %s but is not in the ledger",
				call.Op, a.out.ID, rid, call.Worker, call.End.Format(time.RFC3339Nano))
			continue
		}
		e := c.events[a.line]
		if string(e.Op) != call.Op || e.Card != a.out.ID || (call.Card != "" && e.Card != call.Card) {
			r.add(KindAckMismatch, a.out.ID, "%s %s (request %s) printed card %s but line %d is %s of %s",
				call.Op, call.Card, rid, a.out.ID, c.good[a.line].No, e.Op, e.Card)
			continue
		}
		c.leaseAsPrinted(rid, a, e)
	}
}

// leaseAsPrinted checks that a claim or heartbeat printed the owner and
// epoch its ledger line holds (a claim) or it asked for (a heartbeat).
func (c *checking) leaseAsPrinted(rid string, a *acked, e *ledger.Event) {
	call := a.call
	switch call.Op {
	case "claim":
		c.r.Claims++
		if e.Owner != call.Owner || a.out.ClaimOwner != call.Owner || a.out.ClaimEpoch != e.Epoch {
			c.r.add(KindAckMismatch, e.Card, "claim by %s (request %s) printed owner %s epoch %d, line %d holds owner %s epoch %d",
				call.Owner, rid, a.out.ClaimOwner, a.out.ClaimEpoch, c.good[a.line].No, e.Owner, e.Epoch)
		}
	case "heartbeat":
		if a.out.ClaimOwner != call.Owner || (call.Epoch != 0 && a.out.ClaimEpoch != call.Epoch) {
			c.r.add(KindAckMismatch, e.Card, "heartbeat by %s epoch %d (request %s) printed owner %s epoch %d",
				call.Owner, call.Epoch, rid, a.out.ClaimOwner, a.out.ClaimEpoch)
		}
	}
}

// doubleClaims checks that no two requests were told they won one card at
// one epoch.
func (c *checking) doubleClaims() {
	type cardEpoch struct {
		card  string
		epoch int64
	}
	winners := map[cardEpoch][]*acked{}
	for _, rid := range sortedKeys(c.acks) {
		a := c.acks[rid]
		if a.call.Op == "claim" && a.out != nil && a.out.ClaimEpoch > 0 {
			k := cardEpoch{a.out.ID, a.out.ClaimEpoch}
			winners[k] = append(winners[k], a)
		}
	}
	wkeys := make([]cardEpoch, 0, len(winners))
	for k := range winners {
		wkeys = append(wkeys, k)
	}
	sort.Slice(wkeys, func(i, j int) bool {
		if wkeys[i].card != wkeys[j].card {
			return wkeys[i].card < wkeys[j].card
		}
		return wkeys[i].epoch < wkeys[j].epoch
	})
	for _, k := range wkeys {
		ws := winners[k]
		if len(ws) < 2 {
			continue
		}
		names := make([]string, len(ws))
		for i, a := range ws {
			names[i] = fmt.Sprintf("%s (request %s, acknowledged %s)", a.call.Owner, a.call.RequestID, a.call.End.Format("15:04:05.000000"))
		}
		c.r.add(KindDoubleClaim, k.card, "epoch %d claimed by %s", k.epoch, strings.Join(names, " and "))
	}
}

// claimAck is an acknowledged claim, as a later owner call is judged
// against it.
type claimAck struct {
	epoch int64
	end   time.Time
	owner string
}

// staleOwners checks that an owner call made after a later claim of its
// card was acknowledged is fenced and leaves no trace in the ledger.
func (c *checking) staleOwners() {
	claimsOf := map[string][]claimAck{}
	for _, a := range c.acks {
		if a.call.Op == "claim" && a.out != nil {
			claimsOf[a.out.ID] = append(claimsOf[a.out.ID], claimAck{a.out.ClaimEpoch, a.call.End, a.call.Owner})
		}
	}
	for i := range c.h.Calls {
		call := &c.h.Calls[i]
		if !fencedOp(call.Op) || call.Epoch <= 0 || call.Card == "" {
			continue
		}
		if by := supersededBy(call, claimsOf[call.Card]); by != nil {
			c.staleCall(call, by)
		}
	}
}

// supersededBy returns the first claim of a later epoch acknowledged
// before call started, or nil.
func supersededBy(call *Call, claims []claimAck) *claimAck {
	for j, ca := range claims {
		if ca.epoch > call.Epoch && ca.end.Before(call.Start) {
			return &claims[j]
		}
	}
	return nil
}

// staleCall judges one stale owner call: refused as fenced, or with no
// answer at all, and in neither case in the ledger.
func (c *checking) staleCall(call *Call, by *claimAck) {
	r := c.r
	r.Stale++
	what := fmt.Sprintf("%s by %s epoch %d (request %s) started %s, after %s's claim at epoch %d was acknowledged at %s",
		call.Op, call.Owner, call.Epoch, call.RequestID, call.Start.Format("15:04:05.000000"), by.owner, by.epoch, by.end.Format("15:04:05.000000"))
	switch code := call.ErrorCode(); {
	case call.Exit == 0:
		r.add(KindStaleAccepted, call.Card, "%s, and exited 0", what)
	case call.Exit == 4 && code == "fenced":
		r.Fenced++
	case call.Killed() || call.Exit == 5 || (call.Exit == 7 && code == "arbiter"):
		// No answer (killed, the lock busy, the arbiter out of reach
		// mid-call); the ledger check below still applies.
	default:
		r.add(KindStaleNotFenced, call.Card, "%s, and exited %d with code %q, want 4 \"fenced\": %s", what, call.Exit, code, bytes.TrimSpace(call.Stderr))
	}
	if call.RequestID != "" && len(c.byReq[call.RequestID]) > 0 {
		r.add(KindStaleInLedger, call.Card, "%s, and the ledger holds it on line %d", what, c.good[c.byReq[call.RequestID][0]].No)
	}
}

// allDone checks that a finished workload completed every card exactly
// once.
func (c *checking) allDone() {
	if !c.h.AllDone {
		return
	}
	completes := map[string]int{}
	for _, e := range c.events {
		if e.Op == ledger.OpComplete {
			completes[e.Card]++
		}
	}
	for _, id := range c.h.Cards {
		card, ok := c.state.Card(id)
		switch {
		case completes[id] != 1:
			c.r.add(KindDoneCount, id, "completed %d times in the ledger, want exactly 1", completes[id])
		case !ok || card.Status != ledger.StatusDone:
			c.r.add(KindDoneCount, id, "ends %s, want done", card.Status)
		}
	}
}

// ackOrder checks that acknowledged events are in the ledger in an order
// that respects real time: one acknowledged before another started comes
// first.
func (c *checking) ackOrder() {
	var inLedger []*acked
	for _, a := range c.acks {
		if a.out != nil && a.line >= 0 {
			inLedger = append(inLedger, a)
		}
	}
	sort.Slice(inLedger, func(i, j int) bool { return inLedger[i].line < inLedger[j].line })
	// Walking back from the end, minLater is the line-later event
	// acknowledged earliest: if even it ended before b started, b's line
	// should have come after it.
	var minLater *acked
	for i := len(inLedger) - 1; i >= 0; i-- {
		b := inLedger[i]
		if minLater != nil && minLater.call.End.Before(b.first) {
			c.r.add(KindAckOrder, minLater.out.ID, "%s %s (request %s) was acknowledged at %s, before %s %s (request %s) started at %s, yet its line %d comes after line %d",
				minLater.call.Op, minLater.out.ID, minLater.call.RequestID, minLater.call.End.Format("15:04:05.000000"),
				b.call.Op, b.out.ID, b.call.RequestID, b.first.Format("15:04:05.000000"), c.good[minLater.line].No, c.good[b.line].No)
		}
		if minLater == nil || b.call.End.Before(minLater.call.End) {
			minLater = b
		}
	}
}

// leaseKey names one lease: an owner's claim of a card at an epoch.
type leaseKey struct {
	card, owner string
	epoch       int64
}

// checkLeases builds every acknowledged lease and reports overlaps between
// different owners on one card. A lease runs from its claim's claimed_at to
// the latest lease_expires_at its claim or heartbeats printed, cut short by
// the first release, complete, reclaim or block of that epoch in the ledger.
func (r *Report) checkLeases(acks map[string]*acked, events []*ledger.Event) {
	leases, order := ackedLeases(acks, events)
	byCard := map[string][]*lease{}
	for _, k := range order {
		l := leases[k]
		cutShort(l, events)
		byCard[l.card] = append(byCard[l.card], l)
	}
	for _, card := range sortedKeys(byCard) {
		r.leaseOverlaps(card, byCard[card])
	}
}

// ackedLeases builds the leases the acknowledged claims and heartbeats
// printed, in the order they were first seen.
func ackedLeases(acks map[string]*acked, events []*ledger.Event) (map[leaseKey]*lease, []leaseKey) {
	leases := map[leaseKey]*lease{}
	var order []leaseKey
	for _, rid := range sortedKeys(acks) {
		a := acks[rid]
		if a.call.Op != "claim" || a.out == nil || a.out.ClaimedAt == nil || a.out.LeaseExpiresAt == nil {
			continue
		}
		k := leaseKey{a.out.ID, a.out.ClaimOwner, a.out.ClaimEpoch}
		if l, ok := leases[k]; ok {
			l.extend(*a.out.LeaseExpiresAt)
			continue
		}
		leases[k] = &lease{card: k.card, owner: k.owner, epoch: k.epoch, rid: rid, start: *a.out.ClaimedAt, end: *a.out.LeaseExpiresAt}
		order = append(order, k)
	}
	for _, rid := range sortedKeys(acks) {
		a := acks[rid]
		if a.call.Op != "heartbeat" || a.out == nil || a.out.LeaseExpiresAt == nil || a.out.ClaimOwner == "" {
			continue
		}
		k := leaseKey{a.out.ID, a.out.ClaimOwner, a.out.ClaimEpoch}
		l, ok := leases[k]
		if !ok {
			// The claim itself was never acknowledged (its process was
			// killed after writing); take its start from the ledger.
			if l = leaseFromLedger(k, events); l == nil {
				continue
			}
			leases[k] = l
			order = append(order, k)
		}
		l.extend(*a.out.LeaseExpiresAt)
	}
	return leases, order
}

// leaseFromLedger is the lease k as its claim line in the ledger starts
// it, or nil when the ledger has no such claim.
func leaseFromLedger(k leaseKey, events []*ledger.Event) *lease {
	for _, e := range events {
		if e.Op == ledger.OpClaim && e.Card == k.card && e.Owner == k.owner && e.Epoch == k.epoch {
			return &lease{card: k.card, owner: k.owner, epoch: k.epoch, rid: e.RequestID, start: e.At, end: e.At}
		}
	}
	return nil
}

// extend moves the lease's end to until when that is later.
func (l *lease) extend(until time.Time) {
	if until.After(l.end) {
		l.end = until
	}
}

// cutShort ends l at the first ledger event within it that ends its epoch.
func cutShort(l *lease, events []*ledger.Event) {
	for _, e := range events {
		if e.Card != l.card || e.At.Before(l.start) || !e.At.Before(l.end) {
			continue
		}
		if endsLease(l, e) {
			l.end = e.At
			return
		}
	}
}

// endsLease reports whether e, on l's card within l, ends l.
func endsLease(l *lease, e *ledger.Event) bool {
	switch e.Op {
	case ledger.OpRelease, ledger.OpComplete, ledger.OpReclaim, ledger.OpBlock:
		return e.Epoch == l.epoch || (e.Epoch == 0 && (e.Owner == "" || e.Owner == l.owner))
	case ledger.OpClaim:
		// The owner re-claiming its own live lease moves it to the next
		// epoch. Another owner's claim never ends a lease here: that is
		// the overlap being looked for.
		return e.Epoch > l.epoch && e.Owner == l.owner
	}
	return false
}

// leaseOverlaps reports every pair of one card's leases, of different
// owners, that overlap.
func (r *Report) leaseOverlaps(card string, ls []*lease) {
	sort.Slice(ls, func(i, j int) bool { return ls[i].start.Before(ls[j].start) })
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if !b.start.Before(a.end) {
				break // sorted by start: no later lease overlaps a either
			}
			if a.owner != b.owner {
				r.add(KindLeaseOverlap, card, "%s epoch %d [%s, %s) overlaps %s epoch %d [%s, %s)",
					a.owner, a.epoch, a.start.Format("15:04:05.000000"), a.end.Format("15:04:05.000000"),
					b.owner, b.epoch, b.start.Format("15:04:05.000000"), b.end.Format("15:04:05.000000"))
			}
		}
	}
}

// allowedExit reports whether a call's exit code fits its kind: reads
// succeed; mutations succeed, meet a conflict or fencing (4), time out on
// the lock (5), or find the claim arbiter down (7).
func allowedExit(c *Call) bool {
	switch {
	case c.Exit == 0:
		return true
	case isRead(c.Op):
		return false
	case c.Exit == 4:
		code := c.ErrorCode()
		return code == "conflict" || code == "fenced"
	case c.Exit == 5:
		return c.ErrorCode() == "lock_timeout"
	case c.Exit == 7:
		return c.ErrorCode() == "arbiter" // the claim arbiter was down
	}
	return false
}

// sortedKeys returns a map's keys in order, so reports are deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
