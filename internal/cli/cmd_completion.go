package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// CompletionCmd prints a shell completion script.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" placeholder:"SHELL" help:"bash, zsh or fish."`
}

func (CompletionCmd) Help() string {
	return `Prints a script that makes your shell complete bl's commands and
subcommands, flags, flag values (statuses, states, link types, formats,
ops, sort orders) and card ids (for --id,
--depends-on, --parent, link/unlink --from/--to, show and update) from the
backlog of the current directory. The script asks bl itself
("bl __complete WORDS...") at each <Tab>, so it never goes stale.

Examples:

    source <(bl completion bash)                       # in ~/.bashrc
    source <(bl completion zsh)                        # in ~/.zshrc, after compinit
    bl completion fish > ~/.config/fish/completions/bl.fish` + exitCodesHelp
}

func (c *CompletionCmd) Run(a *App) error {
	script, ok := completionScripts[c.Shell]
	if !ok {
		return usagef(fmt.Sprintf("no completion for shell %q: use bash, zsh or fish", c.Shell))
	}
	_, err := io.WriteString(a.Stdout, script)
	return err
}

var completionScripts = map[string]string{
	"bash": `# bash completion for bl. Load it with: source <(bl completion bash)
_bl() {
  local IFS=$'\n'
  COMPREPLY=($(bl __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _bl bl
`,
	"zsh": `#compdef bl
# zsh completion for bl. Load it after compinit with: source <(bl completion zsh)
_bl() {
  local -a reply
  reply=("${(@f)$(bl __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ -n "${reply[1]}" ]]; then
    compadd -Q -- "${reply[@]}"
  else
    _files
  fi
}
compdef _bl bl
`,
	"fish": `# fish completion for bl. Install it with:
#   bl completion fish > ~/.config/fish/completions/bl.fish
complete -c bl -f -a '(bl __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
}

// completeCommand is the hidden command the scripts call; run handles it
// before kong parses anything, since its arguments are a command line of
// their own, flags included.
const completeCommand = "__complete"

// completeWords prints the completions of the last of words (the word
// being typed, maybe empty), given the words before it, one per line. It
// never fails: a completion that cannot be computed is no completion.
func (a *App) completeWords(words []string) int {
	var cli CLI
	parser, err := newParser(&cli, a, io.Discard, io.Discard, "", map[string]any{})
	if err != nil || len(words) == 0 {
		return exitOK
	}
	for _, s := range completions(parser.Model, words, a.cardIDs, a.getenv) {
		fmt.Fprintln(a.Stdout, s)
	}
	return exitOK
}

// idValued are the flags whose value is a card id; link and unlink add
// --from and --to (log's --from is a cursor).
var idValued = map[string]bool{"id": true, "depends-on": true, "parent": true}

// idQuery is what a card-id completion may offer: the ids of the backlog
// at dir that command (its --id or ID) can act on, for owner when known;
// all ids when command is "".
type idQuery struct {
	dir, command, owner string
}

// completions is what completes cur, the last of words, in the model of
// the command line. ids lists the backlog's card ids, read only when a
// card id is what comes next.
func completions(app *kong.Application, words []string, ids func(idQuery) []string, getenv func(string) string) []string {
	cur := words[len(words)-1]
	l, ok := readWords(app, words[:len(words)-1], getenv)
	if !ok {
		return nil // after "--" (bl run) the words are another command's
	}
	out := l.candidates(app, cur, ids)
	out = slices.DeleteFunc(out, func(s string) bool { return !strings.HasPrefix(s, cur) })
	slices.Sort(out)
	return slices.Compact(out)
}

// typed is what the words before the one being completed say: the
// command, a flag still waiting for its value, how many positionals are
// given, and the --dir and --owner the card ids are read with.
type typed struct {
	cmd         *kong.Node
	pending     *kong.Flag // a flag before cur that takes a value
	positionals int
	dir, owner  string
}

// readWords reads the words before the one being completed; false after
// "--".
func readWords(app *kong.Application, before []string, getenv func(string) string) (typed, bool) {
	l := typed{dir: getenv("BL_DIR"), owner: getenv("BL_OWNER")}
	for i := 0; i < len(before); i++ {
		w := before[i]
		if w == "=" && l.pending != nil { // bash splits --flag=value at '='
			continue
		}
		if l.pending != nil {
			l.setValue(l.pending.Name, w)
			l.pending = nil
			continue
		}
		switch {
		case w == "--":
			return l, false
		case strings.HasPrefix(w, "-"):
			name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := flagOf(app.Node, l.cmd, name)
			if f != nil && hasValue {
				l.setValue(name, value)
			}
			if f != nil && !f.IsBool() && !hasValue {
				l.pending = f
			}
		case l.cmd == nil:
			l.cmd = childNamed(app.Node, w)
		case l.positionals == 0 && childNamed(l.cmd, w) != nil:
			l.cmd = childNamed(l.cmd, w) // a subcommand: dep add, label rm
		default:
			l.positionals++
		}
	}
	return l, true
}

// setValue keeps the value of the flags that change which ids complete.
func (l *typed) setValue(flag, value string) {
	switch flag {
	case "dir":
		l.dir = value
	case "owner":
		l.owner = value
	}
}

// candidates are the words that may stand where cur is: a flag's value,
// flags, commands, or a positional's values.
func (l typed) candidates(app *kong.Application, cur string, ids func(idQuery) []string) []string {
	var out []string
	switch {
	case l.pending != nil:
		out = flagValues(l.pending, l.cmd, idQuery{dir: l.dir, owner: l.owner}, ids)
	case strings.HasPrefix(cur, "-") && strings.Contains(cur, "="):
		name, _, _ := strings.Cut(strings.TrimLeft(cur, "-"), "=")
		if f := flagOf(app.Node, l.cmd, name); f != nil {
			for _, v := range flagValues(f, l.cmd, idQuery{dir: l.dir, owner: l.owner}, ids) {
				out = append(out, "--"+name+"="+v)
			}
		}
	case strings.HasPrefix(cur, "-"):
		for _, group := range nodeFlags(app.Node, l.cmd) {
			for _, f := range group {
				if !f.Hidden {
					out = append(out, "--"+f.Name)
				}
			}
		}
	case l.cmd == nil:
		for _, c := range app.Children {
			if !c.Hidden {
				out = append(out, c.Name)
			}
		}
	case l.positionals == 0 && len(l.cmd.Children) > 0:
		for _, c := range l.cmd.Children {
			if !c.Hidden {
				out = append(out, c.Name)
			}
		}
	case l.positionals < len(l.cmd.Positional):
		p := l.cmd.Positional[l.positionals]
		switch {
		case p.Enum != "":
			out = p.EnumSlice()
		case p.Name == "id":
			out = ids(idQuery{dir: l.dir, command: l.cmd.Name, owner: l.owner})
		}
	}
	return out
}

// flagValues is what the value of flag f may be, where bl knows.
func flagValues(f *kong.Flag, cmd *kong.Node, q idQuery, ids func(idQuery) []string) []string {
	var out []string
	switch {
	case f.Enum != "":
		out = f.EnumSlice()
	case f.Name == "status":
		for _, st := range ledger.Statuses {
			out = append(out, string(st))
		}
	case f.Name == "format" && cmd != nil && cmd.Name == "export":
		for _, f := range export.Formats() {
			out = append(out, string(f))
		}
	case f.Name == "state":
		out = slices.Clone(states) // what parseStates takes
	case f.Name == "type" && cmd != nil && (cmd.Name == "link" || cmd.Name == "unlink"):
		out = slices.Clone(ledger.LinkTypes) // what ValidLinkType takes
	case f.Name == "op":
		for _, op := range ledger.Ops {
			out = append(out, string(op))
		}
	case f.Name == "id" && cmd != nil:
		q.command = cmd.Name
		out = ids(q)
	case idValued[f.Name] || (cmd != nil && (cmd.Name == "link" || cmd.Name == "unlink") && (f.Name == "from" || f.Name == "to")):
		out = ids(q)
	}
	return out
}

// nodeFlags is the flags that may follow on the command line: the
// command's own and the globals, or the globals alone before a command.
func nodeFlags(root, cmd *kong.Node) [][]*kong.Flag {
	if cmd == nil {
		return [][]*kong.Flag{root.Flags}
	}
	return cmd.AllFlags(true)
}

// flagOf finds a flag by long name among those that may follow.
func flagOf(root, cmd *kong.Node, name string) *kong.Flag {
	for _, group := range nodeFlags(root, cmd) {
		for _, f := range group {
			if f.Name == name || slices.Contains(f.Aliases, name) {
				return f
			}
		}
	}
	return nil
}

func childNamed(n *kong.Node, name string) *kong.Node {
	for _, c := range n.Children {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// cardIDs lists the ids of the cards of the backlog at q.dir (found as
// --dir would be) that q.command can act on, or none when there is no
// readable backlog: a lease command offers the cards claimed (by q.owner
// when known; complete without an owner any card not done), claim the
// claimable ones, unblock the blocked, reopen the done, block any not done.
func (a *App) cardIDs(q idQuery) []string {
	path, err := findBacklog(q.dir)
	if err != nil {
		return nil
	}
	b, err := ledger.Open(path, ledger.Options{LockTimeout: a.LockTimeout})
	if err != nil {
		return nil
	}
	defer b.Close()
	var cards []ledger.Card
	if q.command == "claim" {
		cards, err = b.Ready(ledger.Filter{})
	} else {
		cards, err = b.List(ledger.Filter{}, "id")
	}
	if err != nil {
		return nil
	}
	keep := func(c ledger.Card) bool {
		switch q.command {
		case "heartbeat", "release", "fail":
			return c.Status == ledger.StatusClaimed && (q.owner == "" || c.ClaimOwner == q.owner)
		case "complete":
			if q.owner != "" {
				return c.Status == ledger.StatusClaimed && c.ClaimOwner == q.owner
			}
			return c.Status != ledger.StatusDone
		case "unblock":
			return c.Status == ledger.StatusBlocked
		case "reopen":
			return c.Status == ledger.StatusDone
		case "block":
			return c.Status != ledger.StatusDone
		}
		return true
	}
	var ids []string
	for _, c := range cards {
		if keep(c) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}
