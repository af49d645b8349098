package ledger

import (
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
