package wire

import (
	"time"

	json "github.com/goccy/go-json"
)

// The wire types: the events of ledger.jsonl and the cards of
// snapshot.json (the snapshot's other lines are SnapshotHeader, Keyed and
// Conflict, declared next to their code). Their fields, in order, with
// their json tags, are the one schema of the format: codec_gen.go, written
// from them by go generate, holds the encoder, the decoder, the size
// estimates, the bounds and Card's copy and comparison, and the lists of
// ops and statuses. To add a field or an op, change it here and run
// go generate ./ledger/internal/wire; TestCodecGenerated fails while codec_gen.go is
// stale.
//
//go:generate go run ../codecgen/cmd

// FormatVersion is the newest format this package reads and writes. A line
// is written with the lowest version that reads it right (LineVersion), so
// an older bl reads what it can and refuses, with "upgrade bl", what it
// would misread; a snapshot is written at FormatVersion.
const FormatVersion = 4

// Op is the kind of an event. The set is closed: a ledger holding any other
// op is damaged or from a newer bl.
type Op string

// The event kinds, in lifecycle order, which Ops keeps. A new kind is a
// line here and its row in opInfo, its check and apply in the fold's kinds
// table (ledger/internal/fold/ops.go), a Backlog method and a command: see
// CONTRIBUTING.md.
const (
	OpCreate    Op = "create"
	OpUpdate    Op = "update"
	OpClaim     Op = "claim"
	OpHeartbeat Op = "heartbeat"
	OpRelease   Op = "release"
	OpReclaim   Op = "reclaim"
	OpComplete  Op = "complete"
	OpBlock     Op = "block"
	OpUnblock   Op = "unblock"
	OpReopen    Op = "reopen"
	OpLink      Op = "link"
	OpUnlink    Op = "unlink"
	OpNote      Op = "note"
	OpFail      Op = "fail"
	OpHandoff   Op = "handoff"
	OpDelete    Op = "delete"
	OpRestore   Op = "restore"
	// The review gate (format v3). OpReview sends a card to review: the
	// lease ends, the work (note, commit, branch) is recorded.
	// OpClaimReview takes a lease on a card in review, so two reviewers
	// never review one card. OpApprove: the review passed; the card is
	// done. OpReject: the review failed; the card is ready again with the
	// reason kept.
	OpReview      Op = "review"
	OpClaimReview Op = "claim_review"
	OpApprove     Op = "approve"
	OpReject      Op = "reject"
)

// opInfo is what the format says of each op: what an event of it did to
// its card, as a commit summary puts it (Op.Done), and the lowest format
// version that reads it (LineVersion).
var opInfo = map[Op]struct {
	done  string
	since int
}{
	OpCreate: {"created", 1}, OpUpdate: {"updated", 1}, OpClaim: {"claimed", 1},
	OpHeartbeat: {"heartbeats", 1}, OpRelease: {"released", 1}, OpReclaim: {"reclaimed", 1},
	OpComplete: {"completed", 1}, OpBlock: {"blocked", 1}, OpUnblock: {"unblocked", 1},
	OpReopen: {"reopened", 1}, OpLink: {"linked", 1}, OpUnlink: {"unlinked", 1},
	OpNote: {"noted", 2}, OpFail: {"failed", 2},
	OpHandoff: {"handed off", 3}, OpDelete: {"deleted", 3}, OpRestore: {"restored", 3},
	OpReview: {"sent to review", 3}, OpClaimReview: {"taken for review", 3},
	OpApprove: {"approved", 3}, OpReject: {"rejected", 3},
}

// Done says what an event of this op did to its card, as a commit summary
// puts it ("claimed", "completed"; "heartbeats" for the ones only counted).
func (o Op) Done() string { return opInfo[o].done }

// Known reports whether o is an op of the format.
func (o Op) Known() bool {
	_, ok := opInfo[o]
	return ok
}

// Event is one line of the ledger. Field order is the on-disk key order.
type Event struct {
	V  int       `json:"v"`
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Clock is the writer's clock reading, present only when At had to
	// run ahead of it by more than MaxClockSkew to come after the previous
	// event. The fold takes every time it decides or stores from it (see
	// Event.WriterClock), so one fast clock does not stretch later leases.
	Clock     *time.Time `json:"clock,omitempty"`
	Actor     string     `json:"actor"`
	Op        Op         `json:"op"`
	Card      string     `json:"card"`
	RequestID string     `json:"request_id,omitempty"`

	// The lease compare-and-swap and fencing.
	ExpectVersion int64  `json:"expect_version,omitempty"`
	Epoch         int64  `json:"epoch,omitempty"`
	Owner         string `json:"owner,omitempty"`
	TTLSeconds    int64  `json:"ttl_seconds,omitempty"`

	Reason     string          `json:"reason,omitempty"`
	To         string          `json:"to,omitempty"`
	LinkType   string          `json:"type,omitempty"` // a link's type other than blocks (linktypes.go)
	Progress   *int            `json:"progress,omitempty"`
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	Force      bool            `json:"force,omitempty"`
	Fields     *Fields         `json:"fields,omitempty"`

	// Text is a note's text.
	Text string `json:"text,omitempty"`
	// The retry backoff a fail (or the reclaim of an expired lease)
	// carries, from config.json's retry_backoff when it was written: the
	// fold waits BackoffSeconds after the first failed attempt, doubling
	// per attempt up to BackoffMaxSeconds (see retryDelay).
	BackoffSeconds    int64 `json:"backoff_seconds,omitempty"`
	BackoffMaxSeconds int64 `json:"backoff_max_seconds,omitempty"`

	// Where the work lives, recorded by a complete or submit (v3).
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`

	// SourceAt is when an imported note was written in the tracker it
	// came from (bl import): kept beside the ledger's own stamp.
	SourceAt *time.Time `json:"source_at,omitempty"`
}

// Fields are the card fields a create or update sets. A nil pointer leaves
// the field as it is.
type Fields struct {
	Title          *string    `json:"title,omitempty"`
	Body           *string    `json:"body,omitempty"`
	Phase          *string    `json:"phase,omitempty"`
	Priority       *int       `json:"priority,omitempty"`
	Labels         *[]string  `json:"labels,omitempty"`
	DependsOn      *[]string  `json:"depends_on,omitempty"`
	Parent         *string    `json:"parent,omitempty"`
	Acceptance     *[]string  `json:"acceptance,omitempty"`
	MaxAttempts    *int       `json:"max_attempts,omitempty"`
	DeferUntil     *time.Time `json:"defer_until,omitempty"`
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
	// Paths are the globs of the files the work touches (v3).
	Paths *[]string `json:"paths,omitempty"`
	// Assignee is who a lead planned the card for; "" unassigns (v4).
	Assignee *string `json:"assignee,omitempty"`
	// The times an imported card was created, last updated and closed in
	// the tracker it came from (bl import), distinct from the ledger's
	// stamps; a zero time clears one.
	SourceCreatedAt *time.Time `json:"source_created_at,omitempty"`
	SourceUpdatedAt *time.Time `json:"source_updated_at,omitempty"`
	SourceClosedAt  *time.Time `json:"source_closed_at,omitempty"`
}

// Status is where a card is in its lifecycle.
type Status string

// The card statuses.
const (
	StatusReady   Status = "ready"
	StatusClaimed Status = "claimed"
	StatusBlocked Status = "blocked"
	StatusDone    Status = "done"
)

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	return knownStatus(s)
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

	// Links are the card's typed links other than blocks (which are
	// depends_on), each to the card at its other end (linktypes.go).
	Links []Link `json:"links,omitempty"`
	// OpenChildren counts the cards naming this one as parent that are
	// neither done nor deleted; the fold keeps it (epics.go).
	OpenChildren int `json:"open_children,omitempty"`
	// DeletedAt and DeleteReason mark a tombstone (tombstone.go): the card
	// leaves lists, the ready queue, boards and exports until restored.
	DeletedAt    *time.Time `json:"deleted_at,omitempty"`
	DeleteReason string     `json:"delete_reason,omitempty"`
	// Paths are globs of the files the work touches: while the card is
	// claimed or in review they are held (see paths.go).
	Paths []string `json:"paths,omitempty"`
	// Branch and Commit: where the work lives, from the completion or
	// the review request.
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
	// SubmittedBy sent the card to review (its owner, or its actor when
	// it named no owner) and SubmittedActor is the actor of that event:
	// neither may decide the review. RejectReason is why the last review
	// sent it back (kept until it is sent to review again).
	SubmittedBy    string `json:"submitted_by,omitempty"`
	SubmittedActor string `json:"submitted_actor,omitempty"`
	RejectReason   string `json:"reject_reason,omitempty"`
	// LastFailure is why the last attempt failed; ClosedBy who finished
	// the card (the completer, or the reviewer who approved it).
	LastFailure *Failure `json:"last_failure,omitempty"`
	ClosedBy    string   `json:"closed_by,omitempty"`
	// Assignee is the person (or agent) a lead planned the card for. It
	// is no lease: a plain claim by anyone else passes the card over
	// (Filter.Claimer), a claim that names it takes it.
	Assignee string `json:"assignee,omitempty"`
	// SourceCreatedAt, SourceUpdatedAt and SourceClosedAt are the card's
	// times in the tracker it was imported from; Created is the time
	// lists sort by.
	SourceCreatedAt *time.Time `json:"source_created_at,omitempty"`
	SourceUpdatedAt *time.Time `json:"source_updated_at,omitempty"`
	SourceClosedAt  *time.Time `json:"source_closed_at,omitempty"`
}

// Created is when the work was first written down: the source's time for
// an imported card, else the ledger's.
func (c *Card) Created() time.Time {
	if c.SourceCreatedAt != nil {
		return *c.SourceCreatedAt
	}
	return c.CreatedAt
}

// Note is one entry of a card's case file.
type Note struct {
	Text   string    `json:"text"`
	Author string    `json:"author"`
	At     time.Time `json:"at"`
	// SourceAt is when an imported comment was written in its tracker.
	SourceAt *time.Time `json:"source_at,omitempty"`
}

// StatusReview: the work is done and waits for a reviewer. A card in
// review does not satisfy the cards that depend on it.
const StatusReview Status = "review"

// Statuses lists every status in lifecycle order, as boards lay them out.
var Statuses = []Status{StatusReady, StatusClaimed, StatusReview, StatusBlocked, StatusDone}
