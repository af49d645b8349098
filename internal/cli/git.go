package cli

import (
	"context"
	"io"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Git is everything bl does through git: bl sync, the ledger merge driver,
// bl init's merge driver setup, claims and leases through a remote,
// sync.auto, and the codes of git's errors. Package gitcli implements it
// and only bl-git links it in, so the bl every call starts stays small;
// without it, bl hands the commands that need git to bl-git (handover.go).
type Git interface {
	// Sync runs bl sync.
	Sync(a *App, c *SyncCmd) error
	// MergeDriver writes the merge of the ledger files base, ours and
	// theirs into ours.
	MergeDriver(base, ours, theirs string) error
	// SetupMerge makes git merge the backlog in dir by event; nil when
	// dir is outside any git repository.
	SetupMerge(dir string) (*MergeSetup, error)
	// Claim claims through remote: the card counts once the push
	// carrying the claim succeeded.
	Claim(a *App, b *ledger.Backlog, req ledger.ClaimRequest, remote string) (*ledger.Card, error)
	// Lease runs a heartbeat or completion (do) through remote: it is
	// acknowledged once the push carrying it succeeded.
	Lease(a *App, b *ledger.Backlog, remote, requestID string, do func(rid string) (ledger.Card, error)) (ledger.Card, error)
	// AutoSync commits the backlog after a mutation, and with push also
	// exchanges it with the sync remote, as bl sync [--push] would.
	AutoSync(a *App, b *ledger.Backlog, push bool) error
	// ErrorCode is the --json code of a git error, "" for other errors.
	// Git errors exit with code 1.
	ErrorCode(err error) string
}

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

// Emit prints v as JSON under --json, else runs human.
func (a *App) Emit(v any, human func(w io.Writer)) error { return a.emit(v, human) }

// BoardWriter is the hook that regenerates the board file named by
// sync.board before a commit, or nil when none is configured.
func (a *App) BoardWriter(b *ledger.Backlog) func(context.Context) error {
	return a.boardWriter(b)
}

// needGit returns the git side for what, a command that needs it. In the
// lean bl that means handing the command to bl-git, which replaces this
// process; needGit then returns only the error of a failed hand-over.
func (a *App) needGit(what string) (Git, error) {
	if a.git != nil {
		return a.git, nil
	}
	return nil, a.handover(what)
}
