package ledger

import (
	"math/bits"
	"slices"
	"time"

	json "github.com/goccy/go-json"
)

// Status is where a card is in its lifecycle.
type Status string

// The card statuses.
const (
	StatusReady   Status = "ready"
	StatusClaimed Status = "claimed"
	StatusBlocked Status = "blocked"
	StatusDone    Status = "done"
)

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusReady, StatusClaimed, StatusBlocked, StatusDone:
		return true
	}
	return false
}

// Card is one unit of work. Its JSON field names are part of bl's contract.
type Card struct {
	ID             string   `json:"id"`
	Title          string   `json:"title"`
	Body           string   `json:"body,omitempty"`
	Phase          string   `json:"phase,omitempty"`
	Labels         []string `json:"labels"`
	Priority       int      `json:"priority"`
	Status         Status   `json:"status"`
	DependsOn      []string `json:"depends_on"`
	Parent         string   `json:"parent,omitempty"`
	Acceptance     []string `json:"acceptance"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`

	ClaimOwner      string     `json:"claim_owner,omitempty"`
	ClaimEpoch      int64      `json:"claim_epoch"`
	ClaimedAt       *time.Time `json:"claimed_at,omitempty"`
	ClaimTTLSeconds int64      `json:"claim_ttl_seconds,omitempty"`
	LeaseExpiresAt  *time.Time `json:"lease_expires_at,omitempty"`
	LastHeartbeatAt *time.Time `json:"last_heartbeat_at,omitempty"`
	Attempts        int        `json:"attempts"`
	MaxAttempts     int        `json:"max_attempts"`
	DeferUntil      *time.Time `json:"defer_until,omitempty"`

	BlockedReason string          `json:"blocked_reason,omitempty"`
	ClosedAt      *time.Time      `json:"closed_at,omitempty"`
	CloseNote     string          `json:"close_note,omitempty"`
	Progress      *int            `json:"progress,omitempty"`
	Checkpoint    json.RawMessage `json:"checkpoint,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int64     `json:"version"`

	// Notes is the card's case file, oldest first: at most MaxNotes, the
	// oldest dropped first (bl log keeps every one).
	Notes []Note `json:"notes,omitempty"`
}

// Note is one entry of a card's case file.
type Note struct {
	Text   string    `json:"text"`
	Author string    `json:"author"`
	At     time.Time `json:"at"`
}

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
func (c *Card) exhausted() bool {
	return c.MaxAttempts > 0 && c.Attempts >= c.MaxAttempts
}

// clone returns a deep copy, so callers never share slices with the state.
func (c *Card) clone() Card {
	d := *c
	d.Labels = cloneStrings(c.Labels)
	d.DependsOn = cloneStrings(c.DependsOn)
	d.Acceptance = cloneStrings(c.Acceptance)
	if c.Checkpoint != nil {
		d.Checkpoint = append(json.RawMessage(nil), c.Checkpoint...)
	}
	if c.Progress != nil {
		p := *c.Progress
		d.Progress = &p
	}
	if c.Notes != nil {
		d.Notes = slices.Clone(c.Notes)
	}
	return d
}

// sameFields reports whether the fields an update can set are equal.
func (c *Card) sameFields(d *Card) bool {
	return c.Title == d.Title && c.Body == d.Body && c.Phase == d.Phase && c.Priority == d.Priority &&
		slices.Equal(c.Labels, d.Labels) && slices.Equal(c.DependsOn, d.DependsOn) && c.Parent == d.Parent &&
		slices.Equal(c.Acceptance, d.Acceptance) && c.MaxAttempts == d.MaxAttempts &&
		((c.DeferUntil == nil) == (d.DeferUntil == nil)) && (c.DeferUntil == nil || c.DeferUntil.Equal(*d.DeferUntil))
}

// clearLease drops the lease fields; the epoch stays so it only ever grows.
func (c *Card) clearLease() {
	c.ClaimOwner = ""
	c.ClaimedAt = nil
	c.ClaimTTLSeconds = 0
	c.LeaseExpiresAt = nil
	c.LastHeartbeatAt = nil
}

func cloneStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return append([]string{}, s...)
}

func timePtr(t time.Time) *time.Time { return &t }

// MaxCardBytes bounds a card's encoded JSON (compact, as its snapshot line
// holds it) after a create, update or link: what a writer may put in a
// card's fields. The rest of a snapshot line's limit (maxLine) is kept for
// what leases add (owner, checkpoint, reasons, times); any other event is
// refused only when the card would outgrow the line itself. Writers refuse
// such an event (ErrInvalid) and the fold records a merged-in one as a
// conflict, so compaction never writes a line a reader refuses.
const MaxCardBytes = maxLine - 64<<10

// cardLineOverhead is what a snapshot line adds to a card's JSON:
// {"card":...,"crc":"xxxxxxxx"} and the newline.
const cardLineOverhead = len(`{"card":`) + crcSuffixLen + 1

// checkCardSize refuses e when the card it leaves (c after e, or the card e
// creates) would encode to more than the limit for e's op. Bounds clear
// almost every event: one from the strings' lengths, then, near the limit,
// one from a scan for the bytes an escape may lengthen; only a card within
// about a kilobyte of the limit is encoded to measure it exactly.
func (s *State) checkCardSize(k kind, c *Card, e *Event) error {
	limit, content := maxLine-cardLineOverhead, false
	switch e.Op {
	case OpCreate, OpUpdate, OpLink:
		limit, content = MaxCardBytes, true
	}
	if cardBound(c, wideLen)+eventBound(e, wideLen) <= limit || cardBound(c, escapedLen)+eventBound(e, escapedLen) <= limit {
		return nil
	}
	probe := Card{ID: e.Card}
	if c != nil {
		probe = c.clone()
	}
	k.apply(NewState(), &probe, e) // a scratch state: apply may record in it
	probe.Version++
	probe.UpdatedAt = e.clock()
	line, err := appendFramed(nil, snapshotLine{Card: &probe})
	if err != nil {
		return rule(ErrInvalid, "%s of %s leaves a card that cannot be encoded: %v", e.Op, e.Card, err)
	}
	n := len(line) - cardLineOverhead
	switch {
	case n <= limit:
		return nil
	case content:
		return rule(ErrInvalid, "%s of %s would make the card %d bytes encoded; the limit is %d bytes (MaxCardBytes) for a card's title, body, labels, acceptance and other fields together: shorten them", e.Op, e.Card, n, limit)
	}
	return rule(ErrInvalid, "%s of %s would make the card %d bytes encoded; a snapshot line holds at most %d bytes of card: shorten what the %s carries", e.Op, e.Card, n, limit, e.Op)
}

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

// cardBound is at least the length of c's compact JSON, its strings
// measured by strLen, with room for every name, number and time. Zero for
// nil.
func cardBound(c *Card, strLen func(string) int) int {
	if c == nil {
		return 0
	}
	n := 1024 + 6*len(c.Checkpoint)
	for _, s := range [...]string{c.ID, c.Title, c.Body, c.Phase, string(c.Status), c.Parent, c.IdempotencyKey, c.ClaimOwner, c.BlockedReason, c.CloseNote} {
		n += strLen(s)
	}
	for _, l := range [...][]string{c.Labels, c.DependsOn, c.Acceptance} {
		n += listBound(l, strLen)
	}
	return n
}

// eventBound is at least what e can add to a card's compact JSON, its
// strings measured by strLen.
func eventBound(e *Event, strLen func(string) int) int {
	n := 1024 + 6*len(e.Checkpoint)
	for _, s := range [...]string{e.Card, e.Owner, e.Reason, e.To} {
		n += strLen(s)
	}
	if f := e.Fields; f != nil {
		for _, p := range [...]*string{f.Title, f.Body, f.Phase, f.Parent, &f.IdempotencyKey} {
			if p != nil {
				n += strLen(*p)
			}
		}
		for _, l := range [...]*[]string{f.Labels, f.DependsOn, f.Acceptance} {
			if l != nil {
				n += listBound(*l, strLen)
			}
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
