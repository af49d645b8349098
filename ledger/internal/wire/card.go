package wire

import (
	"math/bits"
	"time"
)

// Leased reports whether the card holds a lease that has not expired at now.
func (c *Card) Leased(now time.Time) bool {
	return c.Status == StatusClaimed && c.LeaseExpiresAt != nil && now.Before(*c.LeaseExpiresAt)
}

// Expired reports whether the card is claimed with a lease that has run out
// at now, so others may take it.
func (c *Card) Expired(now time.Time) bool {
	return c.Status == StatusClaimed && (c.LeaseExpiresAt == nil || !now.Before(*c.LeaseExpiresAt))
}

// exhausted reports whether the card has used all the claims max_attempts
// allows.
func (c *Card) Exhausted() bool {
	return c.MaxAttempts > 0 && c.Attempts >= c.MaxAttempts
}

// ClearLease drops the lease fields; the epoch stays so it only ever grows.
func (c *Card) ClearLease() {
	c.ClaimOwner = ""
	c.ClaimedAt = nil
	c.ClaimTTLSeconds = 0
	c.LeaseExpiresAt = nil
	c.LastHeartbeatAt = nil
}

func CloneStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return append([]string{}, s...)
}

func TimePtr(t time.Time) *time.Time { return &t }

// MaxCardBytes bounds a card's encoded JSON (compact, as its snapshot line
// holds it) after a create, update or link: what a writer may put in a
// card's fields. The rest of a snapshot line's limit (MaxLine) is kept for
// what leases add (owner, checkpoint, reasons, times); any other event is
// refused only when the card would outgrow the line itself. Writers refuse
// such an event (ErrInvalid) and the fold records a merged-in one as a
// conflict, so compaction never writes a line a reader refuses.
const MaxCardBytes = MaxLine - 64<<10

// CardLineOverhead is what a snapshot line adds to a card's JSON:
// {"card":...,"crc":"xxxxxxxx"} and the newline.
const CardLineOverhead = len(`{"card":`) + crcSuffixLen + 1

// wideLen is at least the length of s as a JSON string: the longest escape,
// \u00XX or \ufffd, is six bytes for one byte.
func wideLen(s string) int { return 6*len(s) + 2 }

// escapedLen is at least the length of s as a JSON string, closer than
// wideLen: five bytes more for each byte that may be escaped (a quote, a
// backslash, a control character or any byte of a multi-byte sequence,
// found as appendString finds them, eight bytes at a time).
func escapedLen(s string) int {
	n, i := len(s)+2, 0
	for ; i+8 <= len(s); i += 8 {
		n += 5 * bits.OnesCount64(specialMask(load64(s, i)))
	}
	for ; i < len(s); i++ {
		if strByte[s[i]] != 0 {
			n += 5
		}
	}
	return n
}

// listBound is at least the length of a list of strings in compact JSON.
func listBound(list []string, strLen func(string) int) int {
	n := 2
	for _, s := range list {
		n += strLen(s) + 1
	}
	return n
}

// ReviewLeased reports whether a reviewer holds a live lease on the card in
// review at now.
func (c *Card) ReviewLeased(now time.Time) bool {
	return c.Status == StatusReview && c.ClaimOwner != "" && c.LeaseExpiresAt != nil && now.Before(*c.LeaseExpiresAt)
}

// HoldsLease reports whether c holds a lease fence may check e against: a
// claim, or a review lease for the ops a reviewer sends while reviewing.
func (c *Card) HoldsLease(e *Event) bool {
	if c.Status == StatusClaimed {
		return true
	}
	if c.Status != StatusReview || c.ClaimOwner == "" {
		return false
	}
	switch e.Op {
	case OpHeartbeat, OpNote, OpRelease:
		return true
	}
	return false
}

// OpenChild reports whether c counts as an open child of its parent: not
// done, not deleted, and not itself waiting on that parent (depends_on, or
// a supersedes or duplicates link), which would hold both back for good.
func (c *Card) OpenChild() bool {
	if c.Status == StatusDone || c.DeletedAt != nil {
		return false
	}
	waits := false
	c.HoldingLinks(func(_, to string) bool {
		waits = to == c.Parent
		return !waits
	})
	return !waits
}

// HoldsPaths reports whether c holds its paths at now: claimed under a
// live lease, or in review.
func (c *Card) HoldsPaths(now time.Time) bool {
	return len(c.Paths) > 0 && (c.Status == StatusReview || c.Leased(now))
}

// CheckCardSize refuses e when the card it leaves (c after e, or the card e
// creates) would encode to more than the limit for e's op. Bounds clear
// almost every event: one from the strings' lengths, then, near the limit,
// one from a scan for the bytes an escape may lengthen; only a card within
// about a kilobyte of the limit is encoded to measure it exactly. apply
// is the op's rule, applying e to a copy of the card.
func CheckCardSize(c *Card, e *Event, apply func(*Card)) error {
	limit, content := MaxLine-CardLineOverhead, false
	switch e.Op {
	case OpCreate, OpUpdate, OpLink:
		limit, content = MaxCardBytes, true
	}
	if cardBound(c, wideLen)+eventBound(e, wideLen) <= limit || cardBound(c, escapedLen)+eventBound(e, escapedLen) <= limit {
		return nil
	}
	probe := Card{ID: e.Card}
	if c != nil {
		probe = c.Clone()
	}
	apply(&probe)
	probe.Version++
	probe.UpdatedAt = e.WriterClock()
	line, err := AppendFramed(nil, SnapshotLine{Card: &probe})
	if err != nil {
		return Rule(ErrInvalid, "%s of %s leaves a card that cannot be encoded: %v", e.Op, e.Card, err)
	}
	n := len(line) - CardLineOverhead
	switch {
	case n <= limit:
		return nil
	case content:
		return Rule(ErrInvalid, "%s of %s would make the card %d bytes encoded; the limit is %d bytes (MaxCardBytes) for a card's title, body, labels, acceptance and other fields together: shorten them", e.Op, e.Card, n, limit)
	}
	return Rule(ErrInvalid, "%s of %s would make the card %d bytes encoded; a snapshot line holds at most %d bytes of card: shorten what the %s carries", e.Op, e.Card, n, limit, e.Op)
}
