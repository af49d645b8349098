package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/internal/fsutil"
	"github.com/bl-backlog/bl/internal/gitdir"
)

// SetupCmd registers bl with an agent runtime: its MCP server, a short
// block of instructions in the file the runtime reads, and (Claude Code)
// the hooks that run bl prime. It merges into what is there, never
// overwrites a user's other settings, refuses a file it cannot parse, and
// is idempotent; --remove takes out exactly what it added.
type SetupCmd struct {
	Runtime string `arg:"" enum:"claude,codex,cursor,gemini" help:"The agent runtime: claude, codex, cursor or gemini."`
	Remove  bool   `help:"Take out what setup added."`
	Owner   string `placeholder:"NAME" help:"Register bl mcp --owner NAME (and bl prime --owner NAME) for every session of this runtime in this repository."`
}

func (SetupCmd) Help() string {
	return `Writes what each runtime reads, in the repository (the git worktree
around the current directory, or the current directory):

    claude   .mcp.json (mcpServers.bl), CLAUDE.md (a marked block), and
             .claude/settings.json: SessionStart and PreCompact hooks
             running bl prime
    codex    ~/.codex/config.toml ([mcp_servers.bl]; $CODEX_HOME if set),
             AGENTS.md (a marked block)
    cursor   .cursor/mcp.json (mcpServers.bl), AGENTS.md (a marked block)
    gemini   .gemini/settings.json (mcpServers.bl), GEMINI.md (a marked block)

JSON and TOML files are merged: only bl's own entry changes, the rest of
the file is kept as it was. A file that does not parse is refused (exit 2)
and nothing is written. A second run changes nothing; --remove takes out
what setup added, and nothing else.

Examples:

    bl setup claude
    bl setup codex --owner codex-1
    bl setup cursor --remove` + exitCodesHelp
}

// The marked block in an instructions file.
const (
	blockBegin = "<!-- bl:begin: written by bl setup; bl setup --remove takes it out -->"
	blockEnd   = "<!-- bl:end -->"
)

// instructionsBlock is what setup adds to AGENTS.md, CLAUDE.md or GEMINI.md.
const instructionsBlock = `## Backlog: bl
Work comes from this repository's bl backlog (MCP server "bl", or the bl
command). Run ` + "`bl prime`" + ` (or read the MCP resource bl://protocol) for the protocol.
In short: claim to get your next task, heartbeat every ttl/3, complete with
the epoch claim returned; an error "fenced" means stop, discard, claim again.`

// setupFile is one file setup writes: its path and how to change it.
type setupFile struct {
	path   string
	change func(old []byte, exists bool) ([]byte, error) // new contents; nil removes the file
}

func (c *SetupCmd) Run(a *App) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := gitdir.Root(cwd)
	if err != nil {
		root = cwd
	}
	server := []any{"mcp"}
	prime := "bl prime"
	if c.Owner != "" {
		server = append(server, "--owner", c.Owner)
		prime += " --owner " + shellQuote(c.Owner)
	}
	jsonServer := func(key string) func([]byte, bool) ([]byte, error) {
		return func(old []byte, exists bool) ([]byte, error) {
			return editJSON(old, exists, func(doc *jsonObject) {
				if c.Remove {
					doc.removePath(key, "bl")
					return
				}
				srv := newJSONObject()
				srv.set("command", "bl")
				srv.set("args", server)
				doc.object(key).set("bl", srv)
			})
		}
	}
	block := func(old []byte, exists bool) ([]byte, error) { return editBlock(old, exists, c.Remove) }
	var files []setupFile
	switch c.Runtime {
	case "claude":
		files = []setupFile{
			{filepath.Join(root, ".mcp.json"), jsonServer("mcpServers")},
			{filepath.Join(root, "CLAUDE.md"), block},
			{filepath.Join(root, ".claude", "settings.json"), func(old []byte, exists bool) ([]byte, error) {
				return editJSON(old, exists, func(doc *jsonObject) { claudeHooks(doc, prime, c.Remove) })
			}},
		}
	case "codex":
		home := a.getenv("CODEX_HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			home = filepath.Join(h, ".codex")
		}
		files = []setupFile{
			{filepath.Join(home, "config.toml"), func(old []byte, exists bool) ([]byte, error) {
				return editTOMLServer(old, server, c.Remove)
			}},
			{filepath.Join(root, "AGENTS.md"), block},
		}
	case "cursor":
		files = []setupFile{
			{filepath.Join(root, ".cursor", "mcp.json"), jsonServer("mcpServers")},
			{filepath.Join(root, "AGENTS.md"), block},
		}
	case "gemini":
		files = []setupFile{
			{filepath.Join(root, ".gemini", "settings.json"), jsonServer("mcpServers")},
			{filepath.Join(root, "GEMINI.md"), block},
		}
	}
	// Every file is read and changed first, so that one that does not
	// parse stops the run before anything is written.
	type write struct {
		path string
		data []byte
		same bool
	}
	var writes []write
	for _, f := range files {
		old, err := os.ReadFile(f.path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		data, err := f.change(old, exists)
		if err != nil {
			return usagef(fmt.Sprintf("%s: %v; fix or move the file, then run bl setup %s again (nothing was written)", f.path, err, c.Runtime))
		}
		writes = append(writes, write{f.path, data, exists && string(old) == string(data) || !exists && data == nil})
	}
	type result struct {
		Path   string `json:"path"`
		Action string `json:"action"`
	}
	var results []result
	for _, w := range writes {
		action := "unchanged"
		switch {
		case w.same:
		case w.data == nil:
			if err := os.Remove(w.path); err != nil {
				return err
			}
			action = "removed"
		default:
			if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
				return err
			}
			if err := fsutil.ReplaceFile(w.path, w.data, nil); err != nil {
				return err
			}
			action = "written"
		}
		results = append(results, result{w.path, action})
	}
	return a.emit(results, func(out io.Writer) {
		for _, r := range results {
			rel, err := filepath.Rel(cwd, r.Path)
			if err != nil || strings.HasPrefix(rel, "..") {
				rel = r.Path
			}
			fmt.Fprintf(out, "%-9s %s\n", r.Action, text(rel))
		}
	})
}

// claudeHooks adds (or removes) the SessionStart and PreCompact hooks
// running bl prime in Claude Code's settings.
func claudeHooks(doc *jsonObject, prime string, remove bool) {
	for _, event := range []string{"SessionStart", "PreCompact"} {
		hooks := doc.object("hooks")
		list, _ := hooks.get(event).([]any)
		var kept []any
		for _, m := range list {
			if !isBlHook(m) {
				kept = append(kept, m)
			}
		}
		if !remove {
			cmd := newJSONObject()
			cmd.set("type", "command")
			cmd.set("command", prime)
			matcher := newJSONObject()
			matcher.set("hooks", []any{cmd})
			kept = append(kept, matcher)
		}
		if len(kept) == 0 {
			hooks.remove(event)
		} else {
			hooks.set(event, kept)
		}
		if len(hooks.keys) == 0 {
			doc.remove("hooks")
		}
	}
}

// isBlHook reports whether a hook matcher entry is the one setup adds.
func isBlHook(m any) bool {
	o, ok := m.(*jsonObject)
	if !ok {
		return false
	}
	hs, _ := o.get("hooks").([]any)
	if len(hs) != 1 {
		return false
	}
	h, ok := hs[0].(*jsonObject)
	if !ok {
		return false
	}
	cmd, _ := h.get("command").(string)
	return cmd == "bl prime" || strings.HasPrefix(cmd, "bl prime --owner ")
}

// editBlock puts the marked block at the end of an instructions file, or
// replaces the one there, or (remove) takes it out.
func editBlock(old []byte, exists, remove bool) ([]byte, error) {
	s := string(old)
	begin := strings.Index(s, blockBegin)
	end := strings.Index(s, blockEnd)
	if begin >= 0 && (end < begin) || begin < 0 && end >= 0 {
		return nil, errors.New("its bl block markers are unbalanced")
	}
	if begin >= 0 {
		end += len(blockEnd)
		if end < len(s) && s[end] == '\n' {
			end++
		}
		s = s[:begin] + s[end:]
		if remove {
			s = strings.TrimRight(s, "\n")
			if s != "" {
				s += "\n"
			}
		}
	}
	if remove {
		if s == "" && exists {
			return nil, nil
		}
		return []byte(s), nil
	}
	blk := blockBegin + "\n" + instructionsBlock + "\n" + blockEnd + "\n"
	if begin >= 0 {
		return []byte(s[:begin] + blk + s[begin:]), nil
	}
	if s != "" {
		s = strings.TrimRight(s, "\n") + "\n\n"
	}
	return []byte(s + blk), nil
}

// shellQuote quotes s for sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
