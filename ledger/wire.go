package ledger

// The wire format's names, as the public API gives them.

import "github.com/bl-backlog/bl/ledger/internal/wire"

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
	ErrIDCollision    = wire.ErrIDCollision
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
	Hidden        = wire.Hidden
	EncodeLine    = wire.EncodeLine
	LinkHolds     = wire.LinkHolds
	LinkPhrase    = wire.LinkPhrase
	LinkTypes     = wire.LinkTypes
	MaxStamp      = wire.MaxStamp
	MinStamp      = wire.MinStamp
	Ops           = wire.Ops
	ParseCursor   = wire.ParseCursor
	Refused       = wire.Refused
	Statuses      = wire.Statuses
	ValidID       = wire.ValidID
	ValidLinkType = wire.ValidLinkType
	ValidName     = wire.ValidName
)
