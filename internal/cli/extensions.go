package cli

import (
	"context"
	"io"

	"github.com/bl-backlog/bl/hooks"
	"github.com/bl-backlog/bl/internal/importer"
)

// Extensions are what a binary links beyond the lean bl, and the one seam
// between the two binaries: each passes its own to Main. The lean bl
// passes none, and hands every command that needs one to bl-git, which
// passes them all (gitcli.Extensions). Nothing is set at start-up: a
// binary has exactly what it passes.
type Extensions struct {
	// Git is bl sync, the merge driver, claims through a remote,
	// sync.auto (git.go; package gitsync).
	Git Git
	// Arbiter is the claim arbiter's client (arbiter.go; package
	// arbiter).
	Arbiter Arbiter
	// Serve runs bl serve (package serve).
	Serve func(a *App, c *ServeCmd) error
	// MCP runs bl mcp: the MCP server over stdio, each tool call run
	// through s (package mcpserver).
	MCP func(ctx context.Context, s *Session) error
	// Daemon serves the relayed command lines on the unix socket sock,
	// each run through s, until ctx ends (bl daemon; package gitcli).
	// ready is called once it listens.
	Daemon func(ctx context.Context, s *Session, sock string, ready func()) error
	// Board runs bl board (package board).
	Board func(a *App, c *BoardCmd) error
	// ReadMarkdown reads a markdown plan for bl import (package
	// importer/mdplan: a CommonMark parser, costly to initialise).
	ReadMarkdown func(file string, r io.Reader) ([]importer.Item, *importer.Report, error)
	// Deliver posts a hook's webhook (package hooks/webhook). Without it
	// a webhook is posted by a bl-git child (deliverViaBLGit).
	Deliver hooks.DeliverFunc
}
