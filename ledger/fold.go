package ledger

// The fold's names, as the public API gives them.

import "github.com/bl-backlog/bl/ledger/internal/fold"

// The fold of a ledger and what it answers (ledger/internal/fold).
type (
	Change   = fold.Change
	Changes  = fold.Changes
	Filter   = fold.Filter
	Hold     = fold.Hold
	RollUp   = fold.RollUp
	Standing = fold.Standing
	State    = fold.State
	Stats    = fold.Stats
)

// How a card stands, for a reader.
const (
	StateBlocked = fold.StateBlocked
	StateClaimed = fold.StateClaimed
	StateDone    = fold.StateDone
	StateExpired = fold.StateExpired
	StateReady   = fold.StateReady
	StateReview  = fold.StateReview
	StateWaiting = fold.StateWaiting
)

// Orders and limits.
const (
	MaxRefLen = fold.MaxRefLen
	SortClaim = fold.SortClaim
	SortID    = fold.SortID
)

// Errors of the fold's rules.
var (
	ErrPathsHeld  = fold.ErrPathsHeld
	ErrSelfReview = fold.ErrSelfReview
)

// Folding, ordering and matching.
var (
	ClaimOrder  = fold.ClaimOrder
	Fold        = fold.Fold
	PathMatches = fold.PathMatches
	RollUpOf    = fold.RollUpOf
	TreeOrder   = fold.TreeOrder
)
