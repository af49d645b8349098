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

// Check judges a history. It reads nothing but its argument.
func Check(h History) Report {
	var r Report
	r.Calls = len(h.Calls)

	// The final ledger: integrity and order.
	good, damaged, torn := ParseLedger(h.Ledger)
	r.Events, r.TornBytes = len(good), torn
	for _, l := range damaged {
		r.add(KindCorrupt, "", "line %d (offset %d) is damaged with good lines after it: %v", l.No, l.Offset, l.Err)
	}
	events := make([]*ledger.Event, len(good))
	for i, l := range good {
		events[i] = l.Event
		if i > 0 {
			p := good[i-1].Event
			if c := p.At.Compare(l.Event.At); c > 0 || (c == 0 && p.ID >= l.Event.ID) {
				r.add(KindOrder, l.Event.Card, "line %d (%s %s at %s) is not after line %d (%s %s at %s)",
					l.No, l.Event.Op, l.Event.ID, l.Event.At.Format(time.RFC3339Nano),
					good[i-1].No, p.Op, p.ID, p.At.Format(time.RFC3339Nano))
			}
		}
	}
	state := ledger.Fold(events)
	for _, c := range state.Conflicts() {
		r.add(KindFoldConflict, c.Card, "%s event %s by %s at %s does not hold when folded: %s", c.Op, c.Event, c.Actor, c.At, c.Reason)
	}

	// Request ids in the ledger.
	byReq := map[string][]int{}
	for i, e := range events {
		if e.RequestID != "" {
			byReq[e.RequestID] = append(byReq[e.RequestID], i)
		}
	}
	for _, rid := range sortedKeys(byReq) {
		if idx := byReq[rid]; len(idx) > 1 {
			lines := make([]string, len(idx))
			for j, i := range idx {
				lines[j] = fmt.Sprint(good[i].No)
			}
			r.add(KindDuplicateRequest, events[idx[0]].Card, "request %s is on lines %s", rid, strings.Join(lines, ", "))
		}
	}

	// Claim epochs per card, in ledger order.
	lastEpoch := map[string]int64{}
	lastLine := map[string]int{}
	for i, e := range events {
		if e.Op != ledger.OpClaim {
			continue
		}
		if want := lastEpoch[e.Card] + 1; e.Epoch != want {
			prev := "no earlier claim"
			if n, ok := lastLine[e.Card]; ok {
				prev = fmt.Sprintf("line %d has epoch %d", n, lastEpoch[e.Card])
			}
			r.add(KindEpochSequence, e.Card, "claim by %s on line %d has epoch %d, want %d (%s)", e.Owner, good[i].No, e.Epoch, want, prev)
		}
		lastEpoch[e.Card], lastLine[e.Card] = e.Epoch, good[i].No
	}

	// Calls: exit codes, and what each request id was acknowledged with.
	acks := map[string]*acked{}
	firstStart := map[string]time.Time{}
	for i := range h.Calls {
		c := &h.Calls[i]
		if c.RequestID != "" {
			if t, ok := firstStart[c.RequestID]; !ok || c.Start.Before(t) {
				firstStart[c.RequestID] = c.Start
			}
		}
		switch {
		case c.Killed():
			r.Killed++
		case c.Exit == 5:
			r.Timeouts++
		}
		if c.Stopped {
			r.Stopped++
		}
		if !c.Killed() && !allowedExit(c) {
			r.add(KindUnexpectedExit, c.Card, "%s %s exited %d: %s", c.Worker, strings.Join(c.Args, " "), c.Exit, bytes.TrimSpace(c.Stderr))
			continue
		}
		if c.Exit != 0 || isRead(c.Op) || c.RequestID == "" {
			continue
		}
		out, err := parseOut(c.Stdout)
		if err != nil {
			r.add(KindUnexpectedExit, c.Card, "%s %s exited 0 but printed %q: %v", c.Worker, strings.Join(c.Args, " "), c.Stdout, err)
			continue
		}
		if _, ok := acks[c.RequestID]; ok {
			// A retry answered after an earlier attempt was already
			// acknowledged: keep the first answer.
			continue
		}
		acks[c.RequestID] = &acked{call: c, out: out, line: -1}
	}
	for rid, a := range acks {
		a.first = firstStart[rid]
		if idx := byReq[rid]; len(idx) > 0 {
			a.line = idx[0]
		}
	}

	// Every acknowledged mutation is in the ledger, as acknowledged.
	for _, rid := range sortedKeys(acks) {
		a := acks[rid]
		c := a.call
		if a.out == nil {
			if a.line >= 0 {
				r.add(KindAckMismatch, c.Card, "%s was told %s %s found nothing (null), but line %d holds it", c.Worker, c.Op, rid, good[a.line].No)
			}
			continue
		}
		r.Acked++
		if a.line < 0 {
			r.add(KindLostAck, a.out.ID, "%s %s (request %s) by %s exited 0 at %s but is not in the ledger",
				c.Op, a.out.ID, rid, c.Worker, c.End.Format(time.RFC3339Nano))
			continue
		}
		e := events[a.line]
		if string(e.Op) != c.Op || e.Card != a.out.ID || (c.Card != "" && e.Card != c.Card) {
			r.add(KindAckMismatch, a.out.ID, "%s %s (request %s) printed card %s but line %d is %s of %s",
				c.Op, c.Card, rid, a.out.ID, good[a.line].No, e.Op, e.Card)
			continue
		}
		switch c.Op {
		case "claim":
			r.Claims++
			if e.Owner != c.Owner || a.out.ClaimOwner != c.Owner || a.out.ClaimEpoch != e.Epoch {
				r.add(KindAckMismatch, e.Card, "claim by %s (request %s) printed owner %s epoch %d, line %d holds owner %s epoch %d",
					c.Owner, rid, a.out.ClaimOwner, a.out.ClaimEpoch, good[a.line].No, e.Owner, e.Epoch)
			}
		case "heartbeat":
			if a.out.ClaimOwner != c.Owner || (c.Epoch != 0 && a.out.ClaimEpoch != c.Epoch) {
				r.add(KindAckMismatch, e.Card, "heartbeat by %s epoch %d (request %s) printed owner %s epoch %d",
					c.Owner, c.Epoch, rid, a.out.ClaimOwner, a.out.ClaimEpoch)
			}
		}
	}

	// No two requests were told they won one card at one epoch.
	type cardEpoch struct {
		card  string
		epoch int64
	}
	winners := map[cardEpoch][]*acked{}
	for _, rid := range sortedKeys(acks) {
		a := acks[rid]
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
		r.add(KindDoubleClaim, k.card, "epoch %d claimed by %s", k.epoch, strings.Join(names, " and "))
	}

	// Leases of different owners on one card never overlap.
	r.checkLeases(acks, events)

	// Stale owners are fenced and leave no trace.
	type claimAck struct {
		epoch int64
		end   time.Time
		owner string
	}
	claimsOf := map[string][]claimAck{}
	for _, a := range acks {
		if a.call.Op == "claim" && a.out != nil {
			claimsOf[a.out.ID] = append(claimsOf[a.out.ID], claimAck{a.out.ClaimEpoch, a.call.End, a.call.Owner})
		}
	}
	for i := range h.Calls {
		c := &h.Calls[i]
		if !fencedOp(c.Op) || c.Epoch <= 0 || c.Card == "" {
			continue
		}
		var by *claimAck
		for j, ca := range claimsOf[c.Card] {
			if ca.epoch > c.Epoch && ca.end.Before(c.Start) {
				by = &claimsOf[c.Card][j]
				break
			}
		}
		if by == nil {
			continue
		}
		r.Stale++
		what := fmt.Sprintf("%s by %s epoch %d (request %s) started %s, after %s's claim at epoch %d was acknowledged at %s",
			c.Op, c.Owner, c.Epoch, c.RequestID, c.Start.Format("15:04:05.000000"), by.owner, by.epoch, by.end.Format("15:04:05.000000"))
		switch code := c.ErrorCode(); {
		case c.Exit == 0:
			r.add(KindStaleAccepted, c.Card, "%s, and exited 0", what)
		case c.Exit == 4 && code == "fenced":
			r.Fenced++
		case c.Killed() || c.Exit == 5 || (c.Exit == 7 && code == "arbiter"):
			// No answer (killed, the lock busy, the arbiter out of reach
			// mid-call); the ledger check below still applies.
		default:
			r.add(KindStaleNotFenced, c.Card, "%s, and exited %d with code %q, want 4 \"fenced\": %s", what, c.Exit, code, bytes.TrimSpace(c.Stderr))
		}
		if c.RequestID != "" && len(byReq[c.RequestID]) > 0 {
			r.add(KindStaleInLedger, c.Card, "%s, and the ledger holds it on line %d", what, good[byReq[c.RequestID][0]].No)
		}
	}

	// A finished workload completed every card exactly once.
	if h.AllDone {
		completes := map[string]int{}
		for _, e := range events {
			if e.Op == ledger.OpComplete {
				completes[e.Card]++
			}
		}
		for _, id := range h.Cards {
			card, ok := state.Card(id)
			switch {
			case completes[id] != 1:
				r.add(KindDoneCount, id, "completed %d times in the ledger, want exactly 1", completes[id])
			case !ok || card.Status != ledger.StatusDone:
				r.add(KindDoneCount, id, "ends %s, want done", card.Status)
			}
		}
	}

	// Acknowledged events are in the ledger in an order that respects real
	// time: one acknowledged before another started comes first.
	var inLedger []*acked
	for _, a := range acks {
		if a.out != nil && a.line >= 0 {
			inLedger = append(inLedger, a)
		}
	}
	sort.Slice(inLedger, func(i, j int) bool { return inLedger[i].line < inLedger[j].line })
	var minLater *acked
	for i := len(inLedger) - 1; i >= 0; i-- {
		b := inLedger[i]
		if minLater != nil && minLater.call.End.Before(b.first) {
			r.add(KindAckOrder, minLater.out.ID, "%s %s (request %s) was acknowledged at %s, before %s %s (request %s) started at %s, yet its line %d comes after line %d",
				minLater.call.Op, minLater.out.ID, minLater.call.RequestID, minLater.call.End.Format("15:04:05.000000"),
				b.call.Op, b.out.ID, b.call.RequestID, b.first.Format("15:04:05.000000"), good[minLater.line].No, good[b.line].No)
		}
		if minLater == nil || b.call.End.Before(minLater.call.End) {
			minLater = b
		}
	}
	return r
}

// checkLeases builds every acknowledged lease and reports overlaps between
// different owners on one card. A lease runs from its claim's claimed_at to
// the latest lease_expires_at its claim or heartbeats printed, cut short by
// the first release, complete, reclaim or block of that epoch in the ledger.
func (r *Report) checkLeases(acks map[string]*acked, events []*ledger.Event) {
	type key struct {
		card, owner string
		epoch       int64
	}
	leases := map[key]*lease{}
	var order []key
	for _, rid := range sortedKeys(acks) {
		a := acks[rid]
		if a.call.Op != "claim" || a.out == nil || a.out.ClaimedAt == nil || a.out.LeaseExpiresAt == nil {
			continue
		}
		k := key{a.out.ID, a.out.ClaimOwner, a.out.ClaimEpoch}
		if l, ok := leases[k]; ok {
			if a.out.LeaseExpiresAt.After(l.end) {
				l.end = *a.out.LeaseExpiresAt
			}
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
		k := key{a.out.ID, a.out.ClaimOwner, a.out.ClaimEpoch}
		l, ok := leases[k]
		if !ok {
			// The claim itself was never acknowledged (its process was
			// killed after writing); take its start from the ledger.
			for _, e := range events {
				if e.Op == ledger.OpClaim && e.Card == k.card && e.Owner == k.owner && e.Epoch == k.epoch {
					l = &lease{card: k.card, owner: k.owner, epoch: k.epoch, rid: e.RequestID, start: e.At, end: e.At}
					leases[k] = l
					order = append(order, k)
					break
				}
			}
			if l == nil {
				continue
			}
		}
		if a.out.LeaseExpiresAt.After(l.end) {
			l.end = *a.out.LeaseExpiresAt
		}
	}
	byCard := map[string][]*lease{}
	for _, k := range order {
		l := leases[k]
		for _, e := range events {
			if e.Card != l.card || e.At.Before(l.start) || !e.At.Before(l.end) {
				continue
			}
			ends := false
			switch e.Op {
			case ledger.OpRelease, ledger.OpComplete, ledger.OpReclaim, ledger.OpBlock:
				ends = e.Epoch == l.epoch || (e.Epoch == 0 && (e.Owner == "" || e.Owner == l.owner))
			case ledger.OpClaim:
				// The owner re-claiming its own live lease moves it to
				// the next epoch. Another owner's claim never ends a
				// lease here: that is the overlap being looked for.
				ends = e.Epoch > l.epoch && e.Owner == l.owner
			}
			if ends {
				l.end = e.At
				break
			}
		}
		byCard[l.card] = append(byCard[l.card], l)
	}
	for _, card := range sortedKeys(byCard) {
		ls := byCard[card]
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
