// Package mcpserver is bl mcp: bl's commands as MCP tools over stdio, for
// agent runtimes. Each tool call runs the command line it stands for in
// this process, through one cli.Session (one open backlog for the whole
// server), so a tool makes the same checks and answers with the same JSON
// as the command with --json. The tools are stricter than the command line
// where an agent needs it: arguments are checked against the tool's schema
// (unknown ones refused), and a call that writes to a claimed card takes
// the epoch. Every tool error is one JSON object, {"error", "code",
// "exit_code", "hint"}, as text and as structured content. Only bl-git
// links this package and the MCP SDK.
package mcpserver

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bl-backlog/bl/internal/cli"
)

// Serve answers MCP requests on stdin and stdout until the client goes
// away (stdin ends) or ctx ends; a claim still waiting for a card then
// tries once more and answers what it got.
func Serve(ctx context.Context, s *cli.Session, version string) error {
	return ServeIO(ctx, s, version, os.Stdin, os.Stdout)
}

// ServeIO is Serve over r and w.
func ServeIO(ctx context.Context, s *cli.Session, version string, r io.Reader, w io.Writer) error {
	clientGone, gone := context.WithCancel(ctx)
	defer gone()
	srv := NewServer(clientGone, s, version)
	err := srv.Run(ctx, &lineTransport{r: r, w: w, gone: gone})
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// NewServer returns the MCP server for s; a claim waiting for a card ends
// when clientGone does (calls that do not wait finish and are answered).
func NewServer(clientGone context.Context, s *cli.Session, version string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bl", Title: "bl backlog", Version: version}, &mcp.ServerOptions{
		Instructions: instructions(s.Owner),
	})
	for _, tl := range tools {
		tl.add(clientGone, srv, s)
	}
	srv.AddPrompt(&mcp.Prompt{Name: "bl-protocol", Title: "How to work through the backlog",
		Description: "The protocol an agent follows to take, work on and finish cards of this backlog."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "bl agent protocol", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: protocolText}},
			}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: protocolURI, Name: "bl-protocol", Title: "bl agent protocol", MIMEType: "text/markdown",
		Description: "The protocol an agent follows to take, work on and finish cards of this backlog."},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: protocolURI, MIMEType: "text/markdown", Text: protocolText},
			}}, nil
		})
	return srv
}

const protocolURI = "bl://protocol"

// protocolText is the agent protocol, the same text bl prime prints.
var protocolText = cli.AgentProtocol

// instructions tell the agent how the tools fit together.
func instructions(owner string) string {
	s := `bl is the backlog of this repository: cards to work on, with leases so that
two agents never work on the same card. Call claim to get your next task
(not ready or list: they only look).

` + protocolText
	if owner != "" {
		s += "\nThis server acts as owner " + owner + ": the owner argument defaults to it.\n"
	}
	return s
}
