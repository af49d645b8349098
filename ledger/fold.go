package ledger

import "github.com/bl-backlog/bl/ledger/internal/fold"

type Change = fold.Change
type Changes = fold.Changes

var ClaimOrder = fold.ClaimOrder
var ErrPathsHeld = fold.ErrPathsHeld
var ErrSelfReview = fold.ErrSelfReview

type Filter = fold.Filter

var Fold = fold.Fold

type Hold = fold.Hold

const MaxRefLen = fold.MaxRefLen

var PathMatches = fold.PathMatches

type RollUp = fold.RollUp

var RollUpOf = fold.RollUpOf

const SortClaim = fold.SortClaim
const SortID = fold.SortID

type Standing = fold.Standing
type State = fold.State

const StateBlocked = fold.StateBlocked
const StateClaimed = fold.StateClaimed
const StateDone = fold.StateDone
const StateExpired = fold.StateExpired
const StateReady = fold.StateReady
const StateReview = fold.StateReview
const StateWaiting = fold.StateWaiting

type Stats = fold.Stats

var TreeOrder = fold.TreeOrder
