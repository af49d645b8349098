// Package gitcli is the git side of the bl command line: bl sync, the
// ledger merge driver, bl init's merge driver setup, bl diff's reading of
// a commit, claims and leases through a remote, and sync.auto, on top of
// package gitsync. Only bl-git links it; bl hands the commands that need
// it to bl-git.
//
// Extensions is what bl-git passes to cli.Main: this package's Git, and
// bl serve, bl mcp, bl board and webhook delivery, which bl-git links and
// the lean bl does not. Git's methods take and return values and print
// nothing.
//
// bl reaches git through four packages, each for one thing: gitdir finds
// a repository's directories from the files git leaves on disk and is the
// one door to the system git (Run); internal/gitwork runs that git for a
// card's work (worktrees, branch heads, staged files); ledger/gitsync is
// the backlog's own traffic with git through go-git (commit, fetch,
// rebase, push, lease refs, the merge driver); internal/cli/gitcli is
// bl-git's commands on top of gitsync.
package gitcli

import (
	"context"
	"errors"

	"github.com/bl-backlog/bl/hooks/webhook"
	"github.com/bl-backlog/bl/internal/board"
	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/internal/importer/mdplan"
	"github.com/bl-backlog/bl/internal/mcpserver"
	"github.com/bl-backlog/bl/internal/serve"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync"
)

// Extensions are bl-git's additions to the lean bl, for cli.Main.
func Extensions() cli.Extensions {
	return cli.Extensions{
		Git:          Git{},
		Arbiter:      Arbiter{},
		Serve:        serve.Command,
		MCP:          serveMCP,
		Daemon:       serveDaemon,
		Board:        runBoard,
		ReadMarkdown: mdplan.ReadMarkdown,
		Deliver:      webhook.Deliver,
	}
}

// Git implements cli.Git with gitsync.
type Git struct{}

var _ cli.Git = Git{}

// Sync commits the backlog, or with req.Remote pulls (req.Pull) or
// pushes it.
func (Git) Sync(ctx context.Context, b *ledger.Backlog, req cli.SyncRequest) (cli.SyncResult, error) {
	s, err := gitsync.New(b, gitsync.Options{Remote: req.Remote, RemoteTracked: req.Tracked, Branch: req.Branch, Message: req.Message, Actor: req.Actor, Now: req.Now,
		BeforeCommit: req.BeforeCommit})
	if err != nil {
		return cli.SyncResult{}, err
	}
	var res gitsync.Result
	switch {
	case req.Remote == "":
		res, err = s.Commit(ctx)
	case req.Pull:
		res, err = s.Pull(ctx)
	default:
		res, err = s.Push(ctx, gitsync.Hooks{})
	}
	if err != nil {
		return cli.SyncResult{}, err
	}
	if res.Committed {
		res.Author, res.GuessedAuthor = s.Identity()
	}
	return res, nil
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

// BacklogAt reads the backlog's tracked files as the commit rev names
// holds them, for bl diff. An unknown revision is invalid input.
func (Git) BacklogAt(dir, rev string) (ledger.Tree, string, error) {
	g, err := gitsync.OpenRepo(dir)
	if err != nil {
		return nil, "", err
	}
	t, h, err := g.BacklogAt(rev)
	if errors.Is(err, gitsync.ErrUnknownRevision) {
		return nil, "", ledger.Errorf(ledger.ErrInvalid, "%v", err)
	}
	if err != nil {
		return nil, "", err
	}
	return t, h.String(), nil
}

// BacklogPairAt reads two commits' backlogs for bl diff OLD NEW, leaving
// the archive segments they share unread.
func (Git) BacklogPairAt(dir, oldRev, newRev string) (trees [2]ledger.Tree, loads [2]ledger.Loader, commits [2]string, err error) {
	g, err := gitsync.OpenRepo(dir)
	if err != nil {
		return trees, loads, commits, err
	}
	trees, loads, hs, err := g.BacklogPairAt(oldRev, newRev)
	if errors.Is(err, gitsync.ErrUnknownRevision) {
		return trees, loads, commits, ledger.Errorf(ledger.ErrInvalid, "%v", err)
	}
	if err != nil {
		return trees, loads, commits, err
	}
	return trees, loads, [2]string{hs[0].String(), hs[1].String()}, nil
}

// syncer opens the git side of a remote lease operation.
func syncer(b *ledger.Backlog, r cli.RemoteWrite) (*gitsync.Syncer, error) {
	return gitsync.New(b, gitsync.Options{Remote: r.Remote, RemoteTracked: r.Tracked, Branch: b.Config().Sync.Branch, Actor: r.Actor, Now: r.Now})
}

// Claim claims through the remote: the card is returned only once the
// push carrying the claim succeeded.
func (Git) Claim(ctx context.Context, b *ledger.Backlog, r cli.RemoteWrite, req ledger.ClaimRequest) (*ledger.Card, error) {
	s, err := syncer(b, r)
	if err != nil {
		return nil, err
	}
	card, _, err := s.Claim(ctx, req)
	return card, err
}

// Lease runs a lease write through the remote: it is acknowledged only
// once the push carrying it succeeded.
func (Git) Lease(ctx context.Context, b *ledger.Backlog, r cli.RemoteWrite, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, error) {
	s, err := syncer(b, r)
	if err != nil {
		return ledger.Card{}, err
	}
	card, _, err := s.Lease(ctx, requestID, do)
	return card, err
}

// LeaseDoctor vets the remote's lease refs of b, and retires a bad one.
func (Git) LeaseDoctor(ctx context.Context, b *ledger.Backlog, r cli.RemoteWrite, retire string) (cli.LeaseReport, error) {
	s, err := syncer(b, r)
	if err != nil {
		return cli.LeaseReport{}, err
	}
	return s.LeaseDoctor(ctx, retire)
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

// serveMCP runs bl mcp: the MCP server over stdin and stdout, running
// each tool call through s.
func serveMCP(ctx context.Context, s *cli.Session) error {
	return mcpserver.Serve(ctx, s, cli.Version())
}

// runBoard runs bl board, with the terminal libraries the lean bl leaves
// out.
func runBoard(a *cli.App, _ *cli.BoardCmd) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	return board.Run(a.Context(), board.Source{B: b, Now: a.Clock(),
		Approve: func(ctx context.Context, id string) error {
			_, err := b.Approve(ctx, ledger.ReviewRequest{Mutation: a.Mutation(""), ID: id})
			return err
		},
		Reject: func(ctx context.Context, id, reason string) error {
			_, err := b.Reject(ctx, ledger.ReviewRequest{Mutation: a.Mutation(""), ID: id, Reason: reason})
			return err
		},
	})
}
