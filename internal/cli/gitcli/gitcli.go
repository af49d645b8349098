// Package gitcli is the git side of the bl command line: bl sync, the
// ledger merge driver, bl init's merge driver setup, claims and leases
// through a remote, and sync.auto, on top of package gitsync. Only bl-git
// links it; bl hands the commands that need it to bl-git.
package gitcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/internal/mcpserver"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync"
)

// Main runs bl with git built in (bl-git) and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.MainWithGit(Git{}, args, stdout, stderr)
}

// Git implements cli.Git with gitsync.
type Git struct{}

var _ cli.Git = Git{}

// Sync runs bl sync: commit the backlog, or with --pull / --push exchange
// it with a remote.
func (Git) Sync(a *cli.App, c *cli.SyncCmd) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	cfg := b.Config().Sync
	exchange := c.Pull || c.Push || c.Remote != "" || c.Branch != ""
	remote := firstOf(c.Remote, cfg.Remote, "origin")
	if !exchange {
		remote = ""
	}
	s, err := gitsync.New(b, gitsync.Options{Remote: remote, Branch: firstOf(c.Branch, cfg.Branch), Message: c.Message, Actor: a.ActorName(), Now: a.Clock(),
		BeforeCommit: a.BoardWriter(b)})
	if err != nil {
		return err
	}
	var res gitsync.Result
	switch {
	case !exchange:
		res, err = s.Commit(a.Context())
	case c.Pull && !c.Push:
		res, err = s.Pull(a.Context())
	default:
		res, err = s.Push(a.Context(), gitsync.Hooks{})
	}
	if err != nil {
		return err
	}
	guessed := false
	if res.Committed {
		res.Author, guessed = s.Identity()
	}
	if guessed {
		fmt.Fprintf(a.Stderr, "bl: committed as %s: git has no user.email here; set one with\n    git config --global user.email you@example.com\n", res.Author)
	}
	return a.Emit(res, func(w io.Writer) {
		if res.Pulled > 0 {
			fmt.Fprintf(w, "pulled %d event(s) from %s %s", res.Pulled, remote, res.Branch)
			if res.Rebased > 0 {
				fmt.Fprintf(w, "; %d local event(s) now after them", res.Rebased)
			}
			if res.Conflicts > 0 {
				fmt.Fprintf(w, "; %d conflict(s) recorded (bl doctor lists them)", res.Conflicts)
			}
			fmt.Fprintln(w)
		}
		switch {
		case res.Committed:
			fmt.Fprintf(w, "committed %s on %s: %s\n", short(res.Commit), res.Branch, firstLine(res.Message))
		case !exchange:
			fmt.Fprintln(w, "nothing to commit")
		}
		if res.Pushed {
			fmt.Fprintf(w, "%s %s is at %s", remote, res.Branch, short(res.Commit))
			if res.Tries > 1 {
				fmt.Fprintf(w, " (after %d tries)", res.Tries)
			}
			fmt.Fprintln(w)
		} else if exchange && !res.Committed && res.Pulled == 0 {
			fmt.Fprintln(w, "up to date")
		}
	})
}

// MergeDriver is the ledger merge driver git runs.
func (Git) MergeDriver(base, ours, theirs string) error {
	return gitsync.MergeDriver(base, ours, theirs)
}

// SetupMerge removes the merge driver lines an older bl init wrote for
// the backlog in dir (see gitsync.SetupMerge).
func (Git) SetupMerge(dir string) (*cli.MergeSetup, error) {
	m, err := gitsync.SetupMerge(dir)
	if errors.Is(err, gitsync.ErrNoRepo) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &cli.MergeSetup{Attributes: m.Attributes, Config: m.Config, Changed: m.Changed}, nil
}

// syncer opens the git side of a remote lease operation.
func syncer(a *cli.App, b *ledger.Backlog, remote string) (*gitsync.Syncer, error) {
	return gitsync.New(b, gitsync.Options{Remote: remote, Branch: b.Config().Sync.Branch, Actor: a.ActorName(), Now: a.Clock()})
}

// Claim claims through the remote: the card is printed only once the push
// carrying the claim succeeded.
func (Git) Claim(a *cli.App, b *ledger.Backlog, req ledger.ClaimRequest, remote string) (*ledger.Card, error) {
	s, err := syncer(a, b, remote)
	if err != nil {
		return nil, err
	}
	card, _, err := s.Claim(a.Context(), req)
	return card, err
}

// Lease runs a heartbeat or completion through the remote: it is
// acknowledged only once the push carrying it succeeded.
func (Git) Lease(a *cli.App, b *ledger.Backlog, remote, requestID string, do func(rid string) (ledger.Card, error)) (ledger.Card, error) {
	s, err := syncer(a, b, remote)
	if err != nil {
		return ledger.Card{}, err
	}
	card, _, err := s.Lease(a.Context(), requestID, func(_ context.Context, rid string) (ledger.Card, error) { return do(rid) })
	return card, err
}

// AutoSync is sync.auto: commit the backlog, and with push exchange it
// with sync.remote (origin).
func (Git) AutoSync(a *cli.App, b *ledger.Backlog, push bool) error {
	cfg := b.Config().Sync
	remote := ""
	if push {
		remote = firstOf(cfg.Remote, "origin")
	}
	s, err := gitsync.New(b, gitsync.Options{Remote: remote, Branch: cfg.Branch, Actor: a.ActorName(), Now: a.Clock(),
		BeforeCommit: a.BoardWriter(b)})
	if err != nil {
		return err
	}
	if push {
		_, err = s.Push(a.Context(), gitsync.Hooks{})
	} else {
		_, err = s.Commit(a.Context())
	}
	return err
}

// ErrorCode names gitsync's errors for --json.
func (Git) ErrorCode(err error) string {
	switch {
	case errors.Is(err, gitsync.ErrRemote):
		return "remote"
	case errors.Is(err, gitsync.ErrDiverged):
		return "diverged"
	case errors.Is(err, gitsync.ErrNoRepo):
		return "no_git"
	}
	return ""
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// ServeMCP runs bl mcp: the MCP server over stdin and stdout.
func (Git) ServeMCP(a *cli.App) error {
	s := cli.NewSession(a)
	defer s.Close()
	return mcpserver.Serve(a.Context(), s, cli.Version(), &mcp.StdioTransport{})
}
