package ledger

// The store's and repair's names, as the public API gives them.

import (
	"github.com/bl-backlog/bl/ledger/internal/repair"
	"github.com/bl-backlog/bl/ledger/internal/store"
)

// The files of a backlog directory (see "The .backlog directory").
const (
	ArchiveDir     = store.ArchiveDir
	AttributesFile = store.AttributesFile
	BrokenFile     = store.BrokenFile
	CacheDir       = store.CacheDir
	CheckpointFile = store.CheckpointFile
	ConfigFile     = store.ConfigFile
	IgnoreFile     = store.IgnoreFile
	IndexFile      = store.IndexFile
	LedgerFile     = store.LedgerFile
	LockFile       = store.LockFile
	QuarantineFile = store.QuarantineFile
	SeenFile       = store.SeenFile
	SnapshotFile   = store.SnapshotFile
)

// config.json and what bl init writes.
type (
	ClaimsConfig   = store.ClaimsConfig
	Config         = store.Config
	RetryBackoff   = store.RetryBackoff
	ReviewConfig   = store.ReviewConfig
	SyncConfig     = store.SyncConfig
	WorktreeConfig = store.WorktreeConfig
)

// Defaults of config.json and the files bl init writes.
const (
	DefaultCompactBytes = store.DefaultCompactBytes
	DefaultConfig       = store.DefaultConfig
	DefaultRetryInitial = store.DefaultRetryInitial
	DefaultRetryMax     = store.DefaultRetryMax
	Gitattributes       = store.Gitattributes
	MaxConfigBytes      = store.MaxConfigBytes
	SnapshotShare       = store.SnapshotShare
)

// What the store and bl doctor report.
type (
	CompactResult = store.CompactResult
	Damage        = repair.Damage
	ExpiredLease  = repair.ExpiredLease
	FutureEvent   = store.FutureEvent
	HistoryFilter = store.HistoryFilter
	LinkError     = store.LinkError
	Loader        = store.Loader
	LostEvents    = store.LostEvents
	MissingEvents = store.MissingEvents
	Quarantined   = store.Quarantined
	RebaseResult  = store.RebaseResult
	Renamed       = store.Renamed
	Report        = repair.Report
	SetAside      = repair.SetAside
)

// Reading and checking the files without opening a backlog, bl init and
// bl doctor.
var (
	ArchivedEvents    = store.ArchivedEvents
	CheckBoardName    = store.CheckBoardName
	CheckLinks        = store.CheckLinks
	CheckSeen         = store.CheckSeen
	ConfigID          = store.ConfigID
	Diagnose          = repair.Diagnose
	FormatSkew        = store.FormatSkew
	GitPath           = repair.GitPath
	Init              = store.Init
	InitConfig        = store.InitConfig
	InitContent       = store.InitContent
	MergeFiles        = store.MergeFiles
	ParseOps          = store.ParseOps
	QuarantineLines   = store.QuarantineLines
	QuarantineMessage = store.QuarantineMessage
	ReadConfig        = store.ReadConfig
	ReadEvents        = store.ReadEvents
	ReadEventsFile    = store.ReadEventsFile
	ReadQuarantine    = store.ReadQuarantine
	RecordQuarantine  = store.RecordQuarantine
	Repair            = repair.Repair
	Segments          = store.Segments
	SetConfigID       = store.SetConfigID
	Tracked           = store.Tracked
	TrustLocal        = store.TrustLocal
	CheckLocalPath    = store.CheckLocalPath
)
