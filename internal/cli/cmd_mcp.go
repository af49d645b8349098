package cli

import "context"

// McpCmd serves the backlog as MCP tools over stdio. The server lives in
// bl-git, so that the lean bl does not link the MCP SDK: bl hands bl mcp
// over to it.
type McpCmd struct {
	Owner string `env:"BL_OWNER" placeholder:"NAME" help:"The lease owner for the whole session: tools' owner argument defaults to it (default: each call names its own)."`
}

func init() {
	register(command{name: "mcp", rank: 130, help: "Serve the backlog to an agent runtime as MCP tools over stdio.", new: func() any { return &McpCmd{} }})
}

// MCPServer is the side of bl-git that serves bl mcp.
type MCPServer interface {
	ServeMCP(ctx context.Context, s *Session) error
}

func (McpCmd) Help() string {
	return `An MCP (Model Context Protocol) server over stdin and stdout, for agent
runtimes such as Claude Code or Codex. Its tools are bl's commands:

    ready list show create claim heartbeat complete fail release note stats

with arguments named as the command-line flags in snake_case (owner, ttl,
id, epoch, title, priority, depends_on, ...). Each result is what the
command prints with --json, as text and as structured content; an error is
a tool error holding the --json error object (error, code, exit_code,
hint). One server keeps the backlog open for all its calls.

Add it to Claude Code:

    claude mcp add bl -- bl mcp

bl mcp runs in bl-git, which bl starts by itself; install bl-git next to
bl.` + exitCodesHelp
}

func (c *McpCmd) gitWork(a *App) string { return "bl mcp" }

func (c *McpCmd) Run(a *App) error {
	srv, ok := a.git.(MCPServer)
	if !ok {
		return &gitMissingError{"bl mcp", "which this binary does not include"}
	}
	s := NewSession(a)
	s.Owner = c.Owner
	defer s.Close()
	return srv.ServeMCP(a.ctx, s)
}
