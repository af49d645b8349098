package cli

import "github.com/bl-backlog/bl/ledger"

// McpCmd serves the backlog as MCP tools over stdio. The server lives in
// bl-git, so that the lean bl does not link the MCP SDK: bl hands bl mcp
// over to it.
type McpCmd struct {
	Owner string `env:"BL_OWNER" placeholder:"NAME" help:"The lease owner for the whole session: tools' owner argument defaults to it (default: each call names its own)."`
}

func (McpCmd) Help() string {
	return `An MCP (Model Context Protocol) server over stdin and stdout, for agent
runtimes such as Claude Code, Codex, Cursor or Gemini CLI. Its tools are
bl's commands:

    claim heartbeat complete fail release note      the work loop
    handoff
    approve reject                                  the review
    ready list show search log stats                read only
    create update assign block unblock reopen link  shape the backlog

with arguments named as the command-line flags in snake_case (owner, ttl,
id, epoch, title, priority, depends_on, ...), checked against each tool's
schema (an unknown argument is refused). heartbeat, complete, fail and
release take the epoch claim returned, and so do note and block on a
claimed card. A card is what the command prints with --json; ready, list
and log answer {"cards"|"events": [...], "more": bool} (limit, default
20; brief cards unless fields asks for more). Every error is one object,
{error, code, exit_code, hint}, as text and as structured content.

The server's instructions, the prompt bl-protocol and the resource
bl://protocol hold the protocol an agent follows (as bl prime prints it).
A claim that waits sends progress notifications, and ends without
claiming when the request is cancelled or the client goes away. When
stdin ends, every request read before it is answered, then bl mcp exits 0.
A config.json changed while it runs (a pull, an edit) holds from the next
call on; one that does not pass the checks of a start is named once on
stderr, and the last good settings stay.

Add it to Claude Code (or run bl setup claude):

    claude mcp add bl -- bl mcp --owner claude-1

bl mcp runs in bl-git, which bl starts by itself; install bl-git next to
bl.` + exitCodesHelp
}

func (c *McpCmd) gitWork(a *App) string { return "bl mcp" }

func (c *McpCmd) Run(a *App) error {
	if a.ext.MCP == nil {
		return &gitMissingError{"bl mcp", "which this binary does not include"}
	}
	// Every claim of the session would be refused with this owner: say so
	// now, as bl run and bl setup do, rather than serve a session that fails.
	if err := ledger.ValidName("owner", c.Owner); err != nil {
		return err
	}
	s := NewSession(a)
	s.Owner = c.Owner
	defer s.Close()
	return a.ext.MCP(a.ctx, s)
}
