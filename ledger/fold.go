package ledger

// The fold's names, as the public API gives them.

import "github.com/bl-backlog/bl/ledger/internal/fold"

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
