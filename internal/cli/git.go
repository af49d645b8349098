package cli

import (
	"context"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync/result"
)

// Git is everything bl does through git: bl sync, the ledger merge driver,
// bl init's merge driver setup, bl diff's reading of a commit, claims and
// leases through a remote, sync.auto, and the codes of git's errors.
// Package gitcli implements it and only bl-git links it in, so the bl
// every call starts stays small; without it, bl hands the commands that
// need git to bl-git (handover.go).
//
// Its methods take and return values and print nothing: the command files
// say what happened.
type Git interface {
	// Sync commits the backlog b, or with a remote exchanges it (bl sync,
	// sync.auto).
	Sync(ctx context.Context, b *ledger.Backlog, req SyncRequest) (SyncResult, error)
	// MergeDriver writes the merge of the ledger files base, ours and
	// theirs into ours.
	MergeDriver(base, ours, theirs string) error
	// SetupMerge makes git merge the backlog in dir by event; nil when
	// dir is outside any git repository.
	SetupMerge(dir string) (*MergeSetup, error)
	// BacklogAt reads the tracked files of the backlog in dir as the
	// commit rev names holds them, and that commit's full hash. An
	// unknown revision is ledger.ErrInvalid.
	BacklogAt(dir, rev string) (tree ledger.Tree, commit string, err error)
	// BacklogPairAt is BacklogAt for two revisions being compared: the
	// archive segments both hold with the same bytes are left unread,
	// and loads read a side's unread files (ledger.DiffUnread).
	BacklogPairAt(dir, oldRev, newRev string) (trees [2]ledger.Tree, loads [2]ledger.Loader, commits [2]string, err error)
	// Claim claims through a remote: the card counts once the push
	// carrying the claim succeeded.
	Claim(ctx context.Context, b *ledger.Backlog, r RemoteWrite, req ledger.ClaimRequest) (*ledger.Card, error)
	// Lease runs a heartbeat, release, completion or block (do) through a
	// remote: it is acknowledged once the push carrying it succeeded. do
	// stamps its event with the request id it is given, and writes with
	// the context it is given (the remote stages the write through it).
	Lease(ctx context.Context, b *ledger.Backlog, r RemoteWrite, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, error)
	// LeaseDoctor lists the lease refs of b on a remote that hold what bl
	// sets aside, and with retire (a card) replaces that card's bad lease
	// ref by a tip holding only what bl folds (compare-and-swap).
	LeaseDoctor(ctx context.Context, b *ledger.Backlog, r RemoteWrite, retire string) (LeaseReport, error)
	// ErrorCode is the --json code of a git error, "" for other errors.
	// Git errors exit with code 1.
	ErrorCode(err error) string
}

// SyncRequest is one sync: a commit of the backlog, or with Remote an
// exchange with that remote.
type SyncRequest struct {
	Remote string // a remote's name, URL or path; "" to commit only
	// Tracked says Remote came from config.json, not the command line:
	// then it must name a git remote of this clone or a network URL.
	Tracked bool
	Pull    bool   // with Remote: pull, do not push
	Branch  string // "" for the checked-out branch
	Message string // the commit subject; "" for the summary of events
	Actor   string // the author and committer name
	Now     func() time.Time
	// BeforeCommit, when set, runs just before the backlog is read for a
	// commit: bl regenerates the board named by sync.board there.
	BeforeCommit func(context.Context) error
}

// SyncResult is what a sync did, as bl sync --json prints it.
type SyncResult = result.Result

// RemoteWrite is an owner command's write through a git remote.
type RemoteWrite struct {
	Remote  string // the remote's name, URL or path
	Tracked bool   // Remote came from config.json (see SyncRequest)
	Actor   string // the author and committer name
	Now     func() time.Time
}

// LeaseReport is what bl doctor --remote found of a remote's lease refs.
type LeaseReport = result.LeaseReport

// MergeSetup says what bl init did to make git merge the backlog by event.
type MergeSetup struct {
	Attributes string `json:"attributes"` // the .gitattributes file
	Config     string `json:"config"`     // the git config file
	Changed    bool   `json:"changed"`    // either file was written
}

// Context is the command's context, cancelled on SIGINT and SIGTERM.
func (a *App) Context() context.Context { return a.ctx }

// Clock is the command's clock.
func (a *App) Clock() func() time.Time { return a.now }

// ActorName is who is acting: --actor, BL_ACTOR, else user@host.
func (a *App) ActorName() string { return a.actor() }

// remoteWrite is the RemoteWrite of this command through remote.
func (a *App) remoteWrite(remote string, tracked bool) RemoteWrite {
	return RemoteWrite{Remote: remote, Tracked: tracked, Actor: a.actor(), Now: a.now}
}

// needGit returns the git side for what, a command that needs it. In the
// lean bl that means handing the command to bl-git, which replaces this
// process; needGit then returns only the error of a failed hand-over.
func (a *App) needGit(what string) (Git, error) {
	if a.ext.Git != nil {
		return a.ext.Git, nil
	}
	return nil, a.handover(what)
}
