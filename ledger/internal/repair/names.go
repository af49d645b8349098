package repair

// The wire format's and the fold's names, as repair uses them.

import (
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// The wire types: an event of the ledger, a card of the snapshot and their parts (ledger/internal/wire).
type (
	Card     = wire.Card
	Conflict = wire.Conflict
	Cursor   = wire.Cursor
	Event    = wire.Event
	Failure  = wire.Failure
	Fields   = wire.Fields
	Link     = wire.Link
	Note     = wire.Note
	Op       = wire.Op
	Receipt  = wire.Receipt
	Status   = wire.Status
)

// What a damaged file is reported as.
type (
	CorruptError = wire.CorruptError
	TornTail     = wire.TornTail
)

// The event kinds.
const (
	OpApprove     = wire.OpApprove
	OpBlock       = wire.OpBlock
	OpClaim       = wire.OpClaim
	OpClaimReview = wire.OpClaimReview
	OpComplete    = wire.OpComplete
	OpCreate      = wire.OpCreate
	OpDelete      = wire.OpDelete
	OpFail        = wire.OpFail
	OpHandoff     = wire.OpHandoff
	OpHeartbeat   = wire.OpHeartbeat
	OpLink        = wire.OpLink
	OpNote        = wire.OpNote
	OpReclaim     = wire.OpReclaim
	OpReject      = wire.OpReject
	OpRelease     = wire.OpRelease
	OpReopen      = wire.OpReopen
	OpRestore     = wire.OpRestore
	OpReview      = wire.OpReview
	OpUnblock     = wire.OpUnblock
	OpUnlink      = wire.OpUnlink
	OpUpdate      = wire.OpUpdate
)

// The card statuses.
const (
	StatusBlocked = wire.StatusBlocked
	StatusClaimed = wire.StatusClaimed
	StatusDone    = wire.StatusDone
	StatusReady   = wire.StatusReady
	StatusReview  = wire.StatusReview
)

// Link types.
const (
	LinkBlocks         = wire.LinkBlocks
	LinkDiscoveredFrom = wire.LinkDiscoveredFrom
	LinkDuplicates     = wire.LinkDuplicates
	LinkRelated        = wire.LinkRelated
	LinkSupersedes     = wire.LinkSupersedes
)

// Limits on input and on time.
const (
	FormatVersion    = wire.FormatVersion
	MaxAuthorLen     = wire.MaxAuthorLen
	MaxBodyLen       = wire.MaxBodyLen
	MaxCardBytes     = wire.MaxCardBytes
	MaxCheckpoint    = wire.MaxCheckpoint
	MaxClockSkew     = wire.MaxClockSkew
	MaxIDLen         = wire.MaxIDLen
	MaxListEntries   = wire.MaxListEntries
	MaxNoteLen       = wire.MaxNoteLen
	MaxNotes         = wire.MaxNotes
	MaxPriority      = wire.MaxPriority
	MaxTTL           = wire.MaxTTL
	MaxTitleLen      = wire.MaxTitleLen
	ReceiptRetention = wire.ReceiptRetention
)

// Errors. Callers match them with errors.Is; the CLI maps each to an exit code.
var (
	ErrConflict       = wire.ErrConflict
	ErrCorrupt        = wire.ErrCorrupt
	ErrFenced         = wire.ErrFenced
	ErrInvalid        = wire.ErrInvalid
	ErrNetworkFS      = wire.ErrNetworkFS
	ErrNotFound       = wire.ErrNotFound
	ErrNotInitialized = wire.ErrNotInitialized
	ErrVersion        = wire.ErrVersion
	Errorf            = wire.Errorf
)

// Encoding, ids, cursors, the accepted stamps and the closed sets of ops, statuses and link types.
var (
	AppendCard    = wire.AppendCard
	CursorOf      = wire.CursorOf
	DecodeLine    = wire.DecodeLine
	EncodeLine    = wire.EncodeLine
	LinkHolds     = wire.LinkHolds
	LinkPhrase    = wire.LinkPhrase
	LinkTypes     = wire.LinkTypes
	MaxStamp      = wire.MaxStamp
	MinStamp      = wire.MinStamp
	Ops           = wire.Ops
	ParseCursor   = wire.ParseCursor
	Statuses      = wire.Statuses
	ValidID       = wire.ValidID
	ValidLinkType = wire.ValidLinkType
)

// What the fold of a ledger answers (ledger/internal/fold); State itself
// is state.go.
type (
	Change      = fold.Change
	Changes     = fold.Changes
	Dependent   = fold.Dependent
	EpicsConfig = fold.EpicsConfig
	Filter      = fold.Filter
	Hold        = fold.Hold
	RollUp      = fold.RollUp
	Standing    = fold.Standing
	Stats       = fold.Stats
)

// How a card stands, for a reader.
const (
	StateBlocked = fold.StateBlocked
	StateClaimed = fold.StateClaimed
	StateDeleted = fold.StateDeleted
	StateDone    = fold.StateDone
	StateExpired = fold.StateExpired
	StateReady   = fold.StateReady
	StateReview  = fold.StateReview
	StateWaiting = fold.StateWaiting
)

// Orders and limits.
const (
	MaxPathLen  = fold.MaxPathLen
	MaxRefLen   = fold.MaxRefLen
	SortClaim   = fold.SortClaim
	SortCreated = fold.SortCreated
	SortID      = fold.SortID
	SortUpdated = fold.SortUpdated
	Unassigned  = fold.Unassigned
)

// Errors of the fold's rules.
var (
	ErrPathsHeld  = fold.ErrPathsHeld
	ErrSelfReview = fold.ErrSelfReview
)

// Folding, ordering, matching and the changes between two cards.
var (
	CardChanges  = fold.CardChanges
	ClaimOrder   = fold.ClaimOrder
	NewChanges   = fold.NewChanges
	PathMatches  = fold.PathMatches
	PathsOverlap = fold.PathsOverlap
	RollUpOf     = fold.RollUpOf
	TreeOrder    = fold.TreeOrder
	ValidPath    = fold.ValidPath
	ValidSort    = fold.ValidSort
)
