package fold

import (
	"fmt"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"slices"
	"strings"
	"time"
)

// kind is how one op validates and applies itself. check sees the card (nil
// only for create) and must not modify anything; apply may assume check
// passed. Neither does IO or reads a clock: now is e.WriterClock(), the writer's
// clock as the event carries it.
type kind struct {
	check func(s *State, c *wire.Card, e *wire.Event) error
	apply func(s *State, c *wire.Card, e *wire.Event)
}

var kinds = map[wire.Op]kind{
	wire.OpCreate:    {checkCreate, applyCreate},
	wire.OpUpdate:    {checkUpdate, applyFields},
	wire.OpClaim:     {checkClaim, applyClaim},
	wire.OpHeartbeat: {checkHeartbeat, applyHeartbeat},
	wire.OpRelease:   {checkRelease, applyRelease},
	wire.OpReclaim:   {checkReclaim, applyReclaim},
	wire.OpComplete:  {checkComplete, applyComplete},
	wire.OpBlock:     {checkBlock, applyBlock},
	wire.OpUnblock:   {checkUnblock, applyUnblock},
	wire.OpReopen:    {checkReopen, applyReopen},
	wire.OpLink:      {checkLink, applyLink},
	wire.OpUnlink:    {checkUnlink, applyUnlink},
	wire.OpNote:      {checkNote, applyNote},
	wire.OpFail:      {checkFail, applyFail},
	wire.OpHandoff:   {checkHandoff, applyHandoff},
	wire.OpDelete:    {checkDelete, applyDelete},
	wire.OpRestore:   {checkRestore, applyRestore},
	// The review gate (review.go).
	wire.OpReview:      {checkSubmit, applySubmit},
	wire.OpClaimReview: {checkClaimReview, applyClaimReview},
	wire.OpApprove:     {checkVerdict, applyApprove},
	wire.OpReject:      {checkVerdict, applyReject},
}

func checkClaim(s *State, c *wire.Card, e *wire.Event) error {
	if e.Owner == "" {
		return wire.Rule(wire.ErrInvalid, "a claim of %s needs an owner", e.Card)
	}
	if e.TTLSeconds < 1 {
		return wire.Rule(wire.ErrInvalid, "a claim of %s needs a ttl of at least 1s", e.Card)
	}
	if e.TTLSeconds > wire.MaxTTLSeconds {
		return wire.Rule(wire.ErrInvalid, "a claim of %s has a ttl of %ds; the longest lease is %s (MaxTTL)", e.Card, e.TTLSeconds, wire.MaxTTL)
	}
	if err := s.claimable(c, e.WriterClock(), e.Owner); err != nil {
		return err
	}
	return checkNextLease(c, e, "claim")
}

// checkNextLease is the compare-and-swap of a claim (what names it): the
// card is at the version the claimer read, and the lease takes the next
// epoch. A claim a claim arbiter decided names no version (0): the arbiter
// ordered the card's lease events, and the version also counts edits
// (notes, updates) other clones may not have synced when it claimed.
func checkNextLease(c *wire.Card, e *wire.Event, what string) error {
	if e.ExpectVersion != 0 && e.ExpectVersion != c.Version {
		return wire.Rule(wire.ErrConflict, "card %s changed (version %d, claim expected %d)", c.ID, c.Version, e.ExpectVersion)
	}
	if e.Epoch != c.ClaimEpoch+1 {
		return wire.Rule(wire.ErrConflict, "%s of %s has epoch %d, next epoch is %d", what, c.ID, e.Epoch, c.ClaimEpoch+1)
	}
	return nil
}

func applyClaim(_ *State, c *wire.Card, e *wire.Event) {
	now := e.WriterClock()
	// Only an owner renewing its own live lease keeps the attempt count.
	if !(c.Leased(now) && c.ClaimOwner == e.Owner) {
		c.Attempts++
	}
	c.Status = wire.StatusClaimed
	grantLease(c, e, now)
	c.Progress, c.Checkpoint = nil, nil
	c.BlockedReason = ""
}

// grantLease gives the card to e's owner at e's epoch for e's TTL from now, as
// a claim and a review claim both do.
func grantLease(c *wire.Card, e *wire.Event, now time.Time) {
	c.ClaimOwner = e.Owner
	c.ClaimEpoch = e.Epoch
	c.ClaimedAt = wire.TimePtr(now)
	c.ClaimTTLSeconds = e.TTLSeconds
	c.LeaseExpiresAt = wire.TimePtr(now.Add(time.Duration(e.TTLSeconds) * time.Second))
	c.LastHeartbeatAt = nil
}

// fence checks that e comes from the current lease holder.
func fence(c *wire.Card, e *wire.Event) error {
	if e.Owner == "" {
		return wire.Rule(wire.ErrInvalid, "%s of %s needs the owner", e.Op, c.ID)
	}
	if !c.HoldsLease(e) || c.ClaimOwner != e.Owner {
		holder := "nobody"
		if c.Status == wire.StatusClaimed {
			holder = fmt.Sprintf("%s (epoch %d)", c.ClaimOwner, c.ClaimEpoch)
		}
		return wire.Rule(wire.ErrFenced, "%s does not hold %s (status %s, held by %s); stop working on it", e.Owner, c.ID, c.Status, holder)
	}
	if e.Epoch != 0 && e.Epoch != c.ClaimEpoch {
		if e.Epoch > c.ClaimEpoch {
			return wire.Rule(wire.ErrFenced, "epoch %d of %s was never granted: the lease is at epoch %d", e.Epoch, c.ID, c.ClaimEpoch)
		}
		return wire.Rule(wire.ErrFenced, "epoch %d of %s is stale: the lease is at epoch %d; stop working on it", e.Epoch, c.ID, c.ClaimEpoch)
	}
	return nil
}

// fenceIfOwned fences a complete or block that names an owner like a
// heartbeat; without one it is a person closing or parking a card by hand,
// and not fenced.
func fenceIfOwned(c *wire.Card, e *wire.Event) error {
	if e.Owner == "" {
		return nil
	}
	return fence(c, e)
}

func checkHeartbeat(_ *State, c *wire.Card, e *wire.Event) error {
	if err := fence(c, e); err != nil {
		return err
	}
	if e.TTLSeconds < 0 {
		return wire.Rule(wire.ErrInvalid, "ttl must be at least 1s")
	}
	if e.TTLSeconds > wire.MaxTTLSeconds {
		return wire.Rule(wire.ErrInvalid, "a heartbeat of %s has a ttl of %ds; the longest lease is %s (MaxTTL)", e.Card, e.TTLSeconds, wire.MaxTTL)
	}
	if e.Progress != nil && (*e.Progress < 0 || *e.Progress > 100) {
		return wire.Rule(wire.ErrInvalid, "progress %d is outside 0-100", *e.Progress)
	}
	if len(e.Checkpoint) > wire.MaxCheckpoint {
		return wire.Rule(wire.ErrInvalid, "checkpoint is larger than %d bytes", wire.MaxCheckpoint)
	}
	return nil
}

func applyHeartbeat(_ *State, c *wire.Card, e *wire.Event) {
	if e.TTLSeconds > 0 {
		c.ClaimTTLSeconds = e.TTLSeconds
	}
	now := e.WriterClock()
	c.LastHeartbeatAt = wire.TimePtr(now)
	c.LeaseExpiresAt = wire.TimePtr(now.Add(time.Duration(c.ClaimTTLSeconds) * time.Second))
	if e.Progress != nil {
		p := *e.Progress
		c.Progress = &p
	}
	if e.Checkpoint != nil {
		c.Checkpoint = append(c.Checkpoint[:0:0], e.Checkpoint...)
	}
}

func checkRelease(_ *State, c *wire.Card, e *wire.Event) error { return fence(c, e) }

// applyRelease returns the card to the pool, or parks it when its attempts
// are used up. Release and reclaim share it.
func applyRelease(_ *State, c *wire.Card, e *wire.Event) {
	if c.Status == wire.StatusReview { // a reviewer giving the review back
		c.ClearLease()
		return
	}
	c.ClearLease()
	if c.Exhausted() {
		c.Status = wire.StatusBlocked
		c.BlockedReason = fmt.Sprintf("max attempts reached (%d of %d)", c.Attempts, c.MaxAttempts)
		return
	}
	c.Status = wire.StatusReady
}

func checkReclaim(_ *State, c *wire.Card, e *wire.Event) error {
	if c.Status != wire.StatusClaimed {
		return wire.Rule(wire.ErrConflict, "card %s is %s, not claimed", c.ID, c.Status)
	}
	if e.Epoch != c.ClaimEpoch {
		return wire.Rule(wire.ErrConflict, "reclaim of %s names epoch %d but the lease is at epoch %d", c.ID, e.Epoch, c.ClaimEpoch)
	}
	if !e.Force && !c.Expired(e.WriterClock()) {
		return wire.Rule(wire.ErrConflict, "lease on %s held by %s runs until %s; use force to take it anyway", c.ID, c.ClaimOwner, c.LeaseExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// checkComplete answers a done card with one message whoever asks: it is
// done, so there is nothing to complete. For an owner's fenced call it is
// ErrFenced (its lease is gone: stop working on the card), else
// ErrConflict; exit code 4 either way. Otherwise an owner's completion is
// fenced like a heartbeat.
func checkComplete(s *State, c *wire.Card, e *wire.Event) error {
	if e.To != "" && c.Status != wire.StatusDone {
		return checkAutoClose(s, c, e)
	}
	if c.Status == wire.StatusDone {
		closed, class := "", wire.ErrConflict
		if c.ClosedAt != nil {
			closed = " since " + c.ClosedAt.Format(time.RFC3339)
		}
		if e.Owner != "" {
			class = wire.ErrFenced
		}
		return wire.Rule(class, "card %s is already done%s; nothing to complete", c.ID, closed)
	}
	if c.Status == wire.StatusReview {
		return wire.Rule(wire.ErrConflict, "card %s is in review: approve or reject it", c.ID)
	}
	if err := fenceIfOwned(c, e); err != nil {
		return err
	}
	return checkWork(c, e)
}

func applyComplete(_ *State, c *wire.Card, e *wire.Event) {
	c.ClearLease()
	c.Status = wire.StatusDone
	c.ClosedAt = wire.TimePtr(e.WriterClock())
	c.CloseNote = e.Reason
	c.BlockedReason = ""
	c.ClosedBy = wire.Closer(e)
	recordWork(c, e)
}

func checkBlock(_ *State, c *wire.Card, e *wire.Event) error {
	if err := fenceIfOwned(c, e); err != nil {
		return err
	}
	if c.Status == wire.StatusDone {
		return wire.Rule(wire.ErrConflict, "card %s is done; reopen it before blocking", c.ID)
	}
	return nil
}

func applyBlock(_ *State, c *wire.Card, e *wire.Event) {
	c.ClearLease()
	c.Status = wire.StatusBlocked
	c.BlockedReason = e.Reason
}

func checkUnblock(_ *State, c *wire.Card, e *wire.Event) error {
	if c.Status != wire.StatusBlocked && !c.Lapsed(e.WriterClock()) {
		return wire.Rule(wire.ErrConflict, "card %s is %s, not blocked", c.ID, c.Status)
	}
	return nil
}

func applyUnblock(_ *State, c *wire.Card, _ *wire.Event) {
	c.ClearLease() // a lapsed lease (see Card.view)
	if c.Exhausted() {
		c.Attempts = 0 // unblocking grants a fresh attempts budget
	}
	c.Status = wire.StatusReady
	c.BlockedReason = ""
}

func checkReopen(_ *State, c *wire.Card, _ *wire.Event) error {
	if c.Status != wire.StatusDone {
		return wire.Rule(wire.ErrConflict, "card %s is %s, not done", c.ID, c.Status)
	}
	return nil
}

// applyReopen starts the card's work over, with a fresh attempts budget.
func applyReopen(_ *State, c *wire.Card, _ *wire.Event) {
	c.Status = wire.StatusReady
	c.ClosedAt = nil
	c.CloseNote = ""
	c.ClosedBy = ""
	c.Attempts = 0
}

func checkLink(s *State, c *wire.Card, e *wire.Event) error {
	if e.LinkType != "" {
		return checkTypedLink(s, c, e)
	}
	if e.To == c.ID {
		return wire.Rule(wire.ErrInvalid, "card %s cannot depend on itself", c.ID)
	}
	if s.liveCard(e.To) == nil {
		return wire.Rule(wire.ErrNotFound, "card %s not found", e.To)
	}
	if slices.Contains(c.DependsOn, e.To) {
		return wire.Rule(wire.ErrConflict, "%s already depends on %s", c.ID, e.To)
	}
	if len(c.DependsOn) >= wire.MaxListEntries {
		return wire.Rule(wire.ErrInvalid, "%s already has %d dependencies", c.ID, wire.MaxListEntries)
	}
	if cycle := s.depCycle(c.ID, e.To); cycle != nil {
		return wire.Rule(wire.ErrConflict, "%s depending on %s would make a cycle: %s", c.ID, e.To, strings.Join(cycle, " → "))
	}
	return nil
}

func applyLink(_ *State, c *wire.Card, e *wire.Event) {
	if e.LinkType != "" {
		c.Links = append(c.Links[:len(c.Links):len(c.Links)], wire.Link{Type: e.LinkType, To: e.To})
		return
	}
	c.DependsOn = append(c.DependsOn, e.To)
}

func checkUnlink(s *State, c *wire.Card, e *wire.Event) error {
	if e.LinkType != "" {
		return checkTypedUnlink(s, c, e)
	}
	if !slices.Contains(c.DependsOn, e.To) {
		return wire.Rule(wire.ErrConflict, "%s does not depend on %s", c.ID, e.To)
	}
	return nil
}

func applyUnlink(_ *State, c *wire.Card, e *wire.Event) {
	if e.LinkType != "" {
		l := wire.Link{Type: e.LinkType, To: e.To}
		c.Links = slices.DeleteFunc(slices.Clone(c.Links), func(x wire.Link) bool { return x == l })
		return
	}
	c.DependsOn = slices.DeleteFunc(c.DependsOn, func(d string) bool { return d == e.To })
}

// applyReclaim returns the card to the pool like a release. A lease that
// ran out counts as a failed attempt: the card waits out the retry backoff
// the event carries, as after a fail.
func applyReclaim(s *State, c *wire.Card, e *wire.Event) {
	expired := c.Expired(e.At)
	if expired {
		wire.RecordFailure(c, "lease expired", "", *wire.OrTime(c.LeaseExpiresAt, e.At))
	}
	applyRelease(s, c, e)
	if expired && c.Status == wire.StatusReady {
		c.DeferUntil = deferredUntil(c, e)
	}
}

func checkNote(_ *State, c *wire.Card, e *wire.Event) error {
	if e.Owner != "" {
		if err := fence(c, e); err != nil {
			return err
		}
	}
	if strings.TrimSpace(e.Text) == "" {
		return wire.Rule(wire.ErrInvalid, "a note on %s needs text", c.ID)
	}
	if len(e.Text) > wire.MaxNoteLen {
		return wire.Rule(wire.ErrInvalid, "note on %s is longer than %d bytes", c.ID, wire.MaxNoteLen)
	}
	if len(noteAuthor(e)) > wire.MaxAuthorLen {
		return wire.Rule(wire.ErrInvalid, "author of a note on %s is longer than %d bytes", c.ID, wire.MaxAuthorLen)
	}
	return wire.CheckSourceTime(c.ID, e.SourceAt)
}

// noteAuthor is who a note is by: the lease owner who wrote it, or else the
// actor.
func noteAuthor(e *wire.Event) string {
	if e.Owner != "" {
		return e.Owner
	}
	return e.Actor
}

// applyNote adds to the case file, dropping the oldest notes past MaxNotes.
func applyNote(_ *State, c *wire.Card, e *wire.Event) {
	keep := c.Notes
	if len(keep) >= wire.MaxNotes {
		keep = keep[len(keep)-wire.MaxNotes+1:]
	}
	notes := make([]wire.Note, len(keep), len(keep)+1)
	copy(notes, keep)
	n := wire.Note{Text: e.Text, Author: noteAuthor(e), At: e.At}
	if e.SourceAt != nil && !e.SourceAt.IsZero() {
		n.SourceAt = wire.TimePtr(e.SourceAt.UTC())
	}
	c.Notes = append(notes, n)
}

func checkFail(_ *State, c *wire.Card, e *wire.Event) error {
	if err := fence(c, e); err != nil {
		return err
	}
	if len(e.Reason) > wire.MaxNoteLen {
		return wire.Rule(wire.ErrInvalid, "reason for failing %s is longer than %d bytes", c.ID, wire.MaxNoteLen)
	}
	if e.BackoffSeconds < 0 || e.BackoffMaxSeconds < 0 {
		return wire.Rule(wire.ErrInvalid, "retry backoff of a fail of %s is negative", c.ID)
	}
	return nil
}

// applyFail gives the card back after a failed attempt (the claim counted
// it): to blocked with the reason when its attempts are used up, else to
// ready, not claimable before the retry backoff has passed.
func applyFail(_ *State, c *wire.Card, e *wire.Event) {
	wire.RecordFailure(c, e.Reason, e.Owner, e.WriterClock())
	c.ClearLease()
	if c.Exhausted() {
		c.Status = wire.StatusBlocked
		c.BlockedReason = fmt.Sprintf("max attempts reached (%d of %d)", c.Attempts, c.MaxAttempts)
		if e.Reason != "" {
			c.BlockedReason += ": " + e.Reason
		}
		return
	}
	c.Status = wire.StatusReady
	c.DeferUntil = deferredUntil(c, e)
}

// deferredUntil is when a card that failed its attempt at e.At may be
// claimed again: the event's backoff after its time, or the card's own
// defer_until when that is later.
func deferredUntil(c *wire.Card, e *wire.Event) *time.Time {
	d := RetryDelay(e.BackoffSeconds, e.BackoffMaxSeconds, c.Attempts)
	if d <= 0 || (c.DeferUntil != nil && !c.DeferUntil.Before(e.At.Add(d))) {
		return c.DeferUntil
	}
	return wire.TimePtr(e.At.Add(d))
}

// retryDelay is the wait after the attempts-th failed attempt: initial
// seconds after the first, doubling each time, at most maxSeconds (no cap
// when 0). It depends on its arguments only, so every clone folds the same.
func RetryDelay(initial, maxSeconds int64, attempts int) time.Duration {
	if initial <= 0 {
		return 0
	}
	const limit = int64(100 * 365 * 24 * 3600) // a century: no overflow below
	if maxSeconds <= 0 || maxSeconds > limit {
		maxSeconds = limit
	}
	d := min(initial, maxSeconds)
	for n := 1; n < attempts && d < maxSeconds; n++ {
		d = min(2*d, maxSeconds)
	}
	return time.Duration(d) * time.Second
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
