package ledger

import "github.com/bl-backlog/bl/ledger/internal/wire"

var AppendCard = wire.AppendCard

type Card = wire.Card
type Conflict = wire.Conflict
type Cursor = wire.Cursor

var CursorOf = wire.CursorOf
var DecodeLine = wire.DecodeLine
var EncodeLine = wire.EncodeLine
var ErrConflict = wire.ErrConflict
var ErrCorrupt = wire.ErrCorrupt
var ErrFenced = wire.ErrFenced
var ErrInvalid = wire.ErrInvalid
var ErrNetworkFS = wire.ErrNetworkFS
var ErrNotFound = wire.ErrNotFound
var ErrNotInitialized = wire.ErrNotInitialized
var ErrVersion = wire.ErrVersion
var Errorf = wire.Errorf

type Event = wire.Event
type Fields = wire.Fields

const FormatVersion = wire.FormatVersion

type Link = wire.Link

const LinkDuplicates = wire.LinkDuplicates

var LinkHolds = wire.LinkHolds
var LinkPhrase = wire.LinkPhrase

const LinkSupersedes = wire.LinkSupersedes
const MaxBodyLen = wire.MaxBodyLen
const MaxCardBytes = wire.MaxCardBytes

type Note = wire.Note
type Op = wire.Op

const OpApprove = wire.OpApprove
const OpBlock = wire.OpBlock
const OpClaim = wire.OpClaim
const OpClaimReview = wire.OpClaimReview
const OpComplete = wire.OpComplete
const OpCreate = wire.OpCreate
const OpFail = wire.OpFail
const OpHeartbeat = wire.OpHeartbeat
const OpLink = wire.OpLink
const OpNote = wire.OpNote
const OpReclaim = wire.OpReclaim
const OpReject = wire.OpReject
const OpRelease = wire.OpRelease
const OpReview = wire.OpReview
const OpUnlink = wire.OpUnlink
const OpUpdate = wire.OpUpdate

var Ops = wire.Ops
var ParseCursor = wire.ParseCursor

type Receipt = wire.Receipt
type Status = wire.Status

const StatusBlocked = wire.StatusBlocked
const StatusClaimed = wire.StatusClaimed
const StatusDone = wire.StatusDone
const StatusReady = wire.StatusReady
const StatusReview = wire.StatusReview

var Statuses = wire.Statuses
var ValidID = wire.ValidID
