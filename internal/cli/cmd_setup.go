package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// SetupCmd registers bl with an agent runtime: its MCP server, a short
// block of instructions in the file the runtime reads, and (Claude Code)
// the hook that runs bl prime. It edits what is there in place, never
// touches a user's other settings, refuses a file it cannot parse or a
// path that leads out of the repository, and is idempotent; --remove
// takes out exactly what it added.
type SetupCmd struct {
	Runtime string `arg:"" enum:"claude,codex,cursor,gemini" help:"The agent runtime: claude, codex, cursor or gemini."`
	Remove  bool   `help:"Take out what setup added."`
	Owner   string `placeholder:"NAME" help:"The lease owner the runtime's sessions act as, in bl mcp --owner and bl prime --owner (default: RUNTIME-REPOSITORY, e.g. claude-myrepo)."`
	Global  bool   `help:"codex: write ~/.codex/config.toml ($CODEX_HOME/config.toml) instead of the project's .codex/config.toml."`
}

func (SetupCmd) Help() string {
	return `Writes what each runtime reads, in the repository (the git worktree
around the current directory, or the current directory):

    claude   .mcp.json (mcpServers.bl), CLAUDE.md (a marked block), and
             .claude/settings.json: a SessionStart hook running bl prime
             (Claude Code runs it at start-up and again after a compaction)
    codex    .codex/config.toml ([mcp_servers.bl]; Codex reads it in
             trusted projects; --global writes ~/.codex/config.toml),
             AGENTS.md (a marked block)
    cursor   .cursor/mcp.json (mcpServers.bl), AGENTS.md (a marked block)
    gemini   .gemini/settings.json (mcpServers.bl; comments and trailing
             commas are kept), GEMINI.md (a marked block)

One owner name goes into both the MCP server (bl mcp --owner) and the
hook (bl prime --owner), so that after a compaction bl prime shows the
cards the session's model holds. It is RUNTIME-REPOSITORY unless --owner
names another, and setup prints it.

Files are edited in place: only bl's own entry changes, every other byte
of the file stays as it was, and --remove gives the file back as it was
before setup. It deletes only the files setup made (a file that held an
empty object before setup stays, with its bytes): setup remembers which
in ~/.config/bl/setup.json ($XDG_CONFIG_HOME/bl), never in the
repository (where that cannot be written, setup warns and goes on). A directory setup made for a file it removes (.claude,
.cursor, .gemini, .codex) goes too when nothing else is in it. A file
that does not parse, a symbolic link, or a path that leads out of the
repository is refused (exit 2) and nothing is written.
Every TOML and JSON file is parsed again after the edit, and the edit is
refused when anything but bl's entry would change. A second run changes
nothing.

The runtimes start "bl" from their PATH: setup says where that is, or
warns when bl is not on it.

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

// setupFile is one file setup writes: its path, the directory it must
// stay inside, and how to change it.
type setupFile struct {
	path   string
	within string
	change func(old []byte, exists bool) ([]byte, error) // new contents; nil removes the file
}

// maxSetupFile bounds the settings and instructions files setup reads: a
// committed file may be anything.
const maxSetupFile = 4 << 20

// setupResult is one line of what setup did.
type setupResult struct {
	Path   string `json:"path"`
	Action string `json:"action"`
}

// setupReport is what setup prints with --json.
type setupReport struct {
	Owner   string        `json:"owner"`
	Command string        `json:"command"`
	Found   string        `json:"found,omitempty"`
	Files   []setupResult `json:"files"`
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
	if c.Global && c.Runtime != "codex" {
		return usagef("--global is for codex only: the other runtimes read their settings from the repository")
	}
	if err := ledger.ValidName("owner", c.Owner); err != nil {
		return err
	}
	owner := c.Owner
	if owner == "" {
		owner = defaultSetupOwner(c.Runtime, root)
	}
	server := []any{"mcp", "--owner", owner}
	prime := "bl prime --owner " + shellQuote(owner)
	files, err := c.files(a, root, server, prime)
	if err != nil {
		return err
	}
	writes, err := c.changes(files)
	if err != nil {
		return err
	}
	// The record is written before the files: after a crash between, a
	// file is not what the record says setup wrote, and --remove takes
	// out bl's entry alone (setup_record.go).
	rec := loadSetupRecord(a)
	defer rec.unlock()
	for i := range writes {
		rec.settle(&writes[i], c.Remove)
	}
	if err := rec.save(); err != nil {
		// The record only refines --remove: a configuration directory
		// that cannot be written (a read-only HOME) stops no setup.
		a.Warn(fmt.Sprintf("%s not kept (%v): a later bl setup --remove deletes a settings file it leaves empty, even one that was there before setup", rec.path, err))
	}
	report := setupReport{Owner: owner, Command: "bl", Files: []setupResult{}}
	if p, err := exec.LookPath("bl"); err == nil {
		report.Found = p
	}
	for _, w := range writes {
		action, err := w.apply()
		if err != nil {
			return err
		}
		report.Files = append(report.Files, setupResult{w.path, action})
		if action == "removed" && removeEmptyDir(filepath.Dir(w.path), w.within) {
			report.Files = append(report.Files, setupResult{filepath.Dir(w.path), "removed"})
		}
	}
	if report.Found == "" && !c.Remove {
		fmt.Fprintf(a.Stderr, "bl: warning: bl is not on this PATH; %s starts \"bl\" from its PATH, so put bl there (make install puts it in ~/.local/bin)\n", c.Runtime)
	}
	return a.emit(report, func(out io.Writer) { c.printReport(out, cwd, report) })
}

// setupWrite is one settings file as bl setup leaves it: data nil removes
// it, same leaves it alone.
type setupWrite struct {
	path    string
	within  string
	data    []byte
	same    bool
	old     []byte // what the file holds now
	existed bool
	change  func(old []byte, exists bool) ([]byte, error)
}

// changes reads and changes every file first, so that one that does not
// parse stops the run before anything is written.
func (c *SetupCmd) changes(files []setupFile) ([]setupWrite, error) {
	var writes []setupWrite
	for _, f := range files {
		if err := checkSetupPath(f.path, f.within); err != nil {
			return nil, usagef(fmt.Sprintf("%s: %v (nothing was written)", f.path, err))
		}
		if fi, err := os.Stat(f.path); err == nil && fi.Size() > maxSetupFile {
			return nil, usagef(fmt.Sprintf("%s: %d bytes, more than any settings file holds (%d); nothing was written", f.path, fi.Size(), maxSetupFile))
		}
		old, err := os.ReadFile(f.path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		data, err := f.change(old, exists)
		if err != nil {
			return nil, usagef(fmt.Sprintf("%s: %v; fix or move the file, then run bl setup %s again (nothing was written)", f.path, err, c.Runtime))
		}
		writes = append(writes, setupWrite{f.path, f.within, data, exists && string(old) == string(data) || !exists && data == nil, old, exists, f.change})
	}
	return writes, nil
}

// apply writes or removes the file and says which it did.
func (w setupWrite) apply() (string, error) {
	switch {
	case w.same:
		return "unchanged", nil
	case w.data == nil:
		if err := os.Remove(w.path); err != nil {
			return "", err
		}
		return "removed", nil
	}
	if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
		return "", err
	}
	if err := fsutil.ReplaceFile(w.path, w.data, nil); err != nil {
		return "", err
	}
	return "written", nil
}

// removeEmptyDir removes dir, the directory of a file --remove just
// removed (.claude, .cursor, .gemini, .codex), when nothing is left in
// it: setup made it for that file. A directory holding anything else, a
// link, and within itself (the repository, ~/.codex) stay.
func removeEmptyDir(dir, within string) bool {
	if filepath.Clean(dir) == filepath.Clean(within) {
		return false
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return false
	}
	return os.Remove(dir) == nil // rmdir: refused (ENOTEMPTY) unless empty
}

// printReport is bl setup's text output: each file and what was done to
// it, relative to the working directory, then the owner and the command.
func (c *SetupCmd) printReport(out io.Writer, cwd string, report setupReport) {
	for _, r := range report.Files {
		rel, err := filepath.Rel(cwd, r.Path)
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = r.Path
		}
		fmt.Fprintf(out, "%-9s %s\n", r.Action, text(rel))
	}
	if c.Remove {
		return
	}
	uses := "bl mcp --owner"
	if c.Runtime == "claude" {
		uses = "bl mcp --owner and the bl prime --owner hook"
	}
	fmt.Fprintf(out, "%-9s %s (%s; --owner NAME for another)\n", "owner", text(report.Owner), uses)
	if report.Found != "" {
		fmt.Fprintf(out, "%-9s bl, found on PATH at %s\n", "command", text(report.Found))
	}
}

// files is what setup writes for the runtime.
func (c *SetupCmd) files(a *App, root string, server []any, prime string) ([]setupFile, error) {
	jsonServer := func(jsonc bool) func([]byte, bool) ([]byte, error) {
		return func(old []byte, exists bool) ([]byte, error) {
			return editJSONFile(old, jsonc, func(d *jsonDoc) error {
				if c.Remove {
					return d.remove([]string{"mcpServers"}, "bl")
				}
				return d.set([]string{"mcpServers"}, "bl", orderedObject{{"command", "bl"}, {"args", server}})
			})
		}
	}
	// CLAUDE.md and GEMINI.md are one runtime's: their block names the
	// owner its MCP server acts as, for the model's own bl commands.
	// AGENTS.md serves Codex and Cursor alike, so it names none.
	block := func(old []byte, exists bool) ([]byte, error) { return editBlock(old, exists, c.Remove, "") }
	ownBlock := func(old []byte, exists bool) ([]byte, error) {
		return editBlock(old, exists, c.Remove, server[len(server)-1].(string))
	}
	in := func(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }
	switch c.Runtime {
	case "claude":
		return []setupFile{
			{in(".mcp.json"), root, jsonServer(false)},
			{in("CLAUDE.md"), root, ownBlock},
			{in(".claude", "settings.json"), root, func(old []byte, exists bool) ([]byte, error) {
				return editJSONFile(old, false, func(d *jsonDoc) error { return claudeHooks(d, prime, c.Remove) })
			}},
		}, nil
	case "codex":
		agents := setupFile{in("AGENTS.md"), root, block}
		if c.Remove && registered(in(".cursor", "mcp.json"), false) {
			agents = setupFile{} // cursor reads the block too
		}
		dir, within, err := c.codexDir(a, root)
		if err != nil {
			return nil, err
		}
		return keepFiles(
			setupFile{filepath.Join(dir, "config.toml"), within, func(old []byte, exists bool) ([]byte, error) {
				return editTOMLServer(old, "bl", server, c.Remove)
			}},
			agents,
		), nil
	case "cursor":
		agents := setupFile{in("AGENTS.md"), root, block}
		if c.Remove && registered(in(".codex", "config.toml"), true) {
			agents = setupFile{} // codex reads the block too
		}
		return keepFiles(setupFile{in(".cursor", "mcp.json"), root, jsonServer(false)}, agents), nil
	default: // gemini
		return []setupFile{
			{in(".gemini", "settings.json"), root, jsonServer(true)},
			{in("GEMINI.md"), root, ownBlock},
		}, nil
	}
}

// codexDir is where codex's config.toml is and the directory it must stay
// inside: the repository's .codex, or with --global $CODEX_HOME (else
// ~/.codex).
func (c *SetupCmd) codexDir(a *App, root string) (dir, within string, err error) {
	if !c.Global {
		return filepath.Join(root, ".codex"), root, nil
	}
	dir = a.getenv("CODEX_HOME")
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", "", err
		}
		dir = filepath.Join(h, ".codex")
	}
	return dir, dir, nil
}

// keepFiles is files without the empty ones (a file setup leaves alone).
func keepFiles(files ...setupFile) []setupFile {
	var out []setupFile
	for _, f := range files {
		if f.path != "" {
			out = append(out, f)
		}
	}
	return out
}

// registered reports whether a runtime's settings file registers bl's
// server: AGENTS.md serves both Codex and Cursor, so removing one keeps
// the block while the other is set up.
func registered(path string, toml bool) bool {
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return false // a FIFO would hold the read forever
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	if toml {
		doc, err := parseTOML(data)
		return err == nil && tomlServer(doc) != nil
	}
	d, err := parseJSONDoc(data, false)
	if err != nil {
		return false
	}
	o := d.lookup("mcpServers")
	return o != nil && o.member("bl") >= 0
}

// defaultSetupOwner is RUNTIME-REPOSITORY: one name per runtime and
// repository, the same every time setup runs there.
func defaultSetupOwner(runtime, root string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, filepath.Base(root))
	name = strings.Trim(name, "-.")
	if name == "" {
		return runtime
	}
	return runtime + "-" + name
}

// checkSetupPath refuses a target that is a symbolic link or no regular
// file (a FIFO would hold the read forever), or whose directory resolves
// outside within (a committed ".gemini -> ../elsewhere" must not make
// setup write outside the repository).
func checkSetupPath(path, within string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return errors.New("is a symbolic link; bl setup writes only regular files (replace the link with the file it points to, or remove it)")
	} else if err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("is a %s, not a regular file; bl setup writes only regular files (move it away)", fileKind(fi.Mode()))
	}
	base := resolveExisting(within)
	real := resolveExisting(filepath.Dir(path))
	if rel, err := filepath.Rel(base, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("its directory leads out of %s (to %s) through a symbolic link; bl setup writes only inside it", within, real)
	}
	return nil
}

// editJSONFile applies edit to a settings file and returns the new
// contents, or nil when that leaves an empty object (the file is then
// removed, or not made).
func editJSONFile(old []byte, jsonc bool, edit func(*jsonDoc) error) ([]byte, error) {
	d, err := parseJSONDoc(old, jsonc)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"mcpServers", "hooks"} {
		if i := d.root.member(k); i >= 0 && d.root.members[i].val.kind != '{' {
			return nil, fmt.Errorf("%q is not an object", k)
		}
	}
	if err := edit(d); err != nil {
		return nil, err
	}
	if len(d.root.members) == 0 {
		return nil, nil
	}
	return d.src, nil
}

// claudeHooks adds (or removes) the SessionStart hook running bl prime
// in Claude Code's settings. Claude Code runs SessionStart hooks again
// after a compaction and feeds their output to the model; PreCompact
// output is not, so a PreCompact hook an older bl added is taken out.
func claudeHooks(d *jsonDoc, prime string, remove bool) error {
	want := orderedObject{{"hooks", []any{orderedObject{{"type", "command"}, {"command", prime}}}}}
	for _, event := range []string{"SessionStart", "PreCompact"} {
		add := event == "SessionStart" && !remove
		hooks := d.lookup("hooks")
		var list *jsonNode
		if hooks != nil {
			if i := hooks.member(event); i >= 0 {
				if list = hooks.members[i].val; list.kind != '[' {
					return fmt.Errorf("hooks.%s is not a list", event)
				}
			}
		}
		if list == nil {
			if add {
				if err := d.set([]string{"hooks"}, event, []any{want}); err != nil {
					return err
				}
			}
			continue
		}
		// Keep a single bl entry that is already as wanted.
		var ours []int
		for i, e := range list.elems {
			if isBlHook(d.value(e)) {
				ours = append(ours, i)
			}
		}
		if add && len(ours) == 1 && reflect.DeepEqual(d.value(list.elems[ours[0]]), normalJSON(want)) {
			continue
		}
		for k := len(ours) - 1; k >= 0; k-- {
			list = d.lookup("hooks").members[d.lookup("hooks").member(event)].val
			if len(list.elems) == 1 {
				if err := d.remove([]string{"hooks"}, event); err != nil {
					return err
				}
				break
			}
			if err := d.cutElem(list, ours[k]); err != nil {
				return err
			}
		}
		if add {
			if h := d.lookup("hooks"); h != nil && h.member(event) >= 0 {
				if err := d.appendElem(h.members[h.member(event)].val, want); err != nil {
					return err
				}
			} else if err := d.set([]string{"hooks"}, event, []any{want}); err != nil {
				return err
			}
		}
	}
	return nil
}

// isBlHook reports whether a hook matcher entry is the one setup adds.
func isBlHook(m any) bool {
	o, ok := m.(map[string]any)
	if !ok {
		return false
	}
	hs, _ := o["hooks"].([]any)
	if len(hs) != 1 {
		return false
	}
	h, ok := hs[0].(map[string]any)
	if !ok {
		return false
	}
	cmd, _ := h["command"].(string)
	return cmd == "bl prime" || strings.HasPrefix(cmd, "bl prime --owner ")
}

// editBlock puts the marked block at the end of an instructions file, or
// replaces the one there, or (remove) takes it out. The file's own bytes
// are kept as they are: setup adds one newline before a block it appends
// (a blank line after a last line that ends, the end of one that does
// not) and --remove takes that one newline out again.
func editBlock(old []byte, exists, remove bool, owner string) ([]byte, error) {
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
		head, tail := s[:begin], s[end:]
		if remove && tail == "" {
			head = strings.TrimSuffix(head, "\n")
		}
		s = head + tail
	}
	if remove {
		if !exists || s == "" {
			return nil, nil // nothing to take out, or nothing left
		}
		return []byte(s), nil
	}
	text := instructionsBlock
	if owner != "" {
		text += "\nYour owner name is " + owner + " (the MCP server acts as it); on the\ncommand line pass it: bl prime --owner " + shellQuote(owner) + "."
	}
	blk := blockBegin + "\n" + text + "\n" + blockEnd + "\n"
	if begin >= 0 {
		return []byte(s[:begin] + blk + s[begin:]), nil
	}
	if s != "" {
		s += "\n"
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

// fileKind names what a file that is not a regular one is, for a message.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
