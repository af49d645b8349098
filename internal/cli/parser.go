package cli

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kong"
)

// Globals are the flags every command takes.
type Globals struct {
	Dir         string        `name:"dir" env:"BL_DIR" placeholder:"PATH" help:"Backlog directory (default: the nearest .backlog upward, shared across git worktrees)."`
	JSON        bool          `name:"json" help:"Machine output: the bare object, array or null; errors as a JSON object on stderr."`
	Actor       string        `name:"actor" env:"BL_ACTOR" placeholder:"NAME" help:"Who is acting (default: user@host)."`
	LockTimeout time.Duration `name:"lock-timeout" default:"10s" placeholder:"DURATION" help:"How long to wait for the backlog lock."`
}

// command is one bl subcommand: its name, its line in bl --help, and a
// fresh value of its kong struct. The table of them is commands.go.
type command struct {
	name   string
	help   string
	hidden bool
	new    func() any
}

// CLI is the command line's root: the global flags. The subcommands are
// added to the parser from commands.
type CLI struct {
	Globals
}

// newParser builds the parser over cli. With only set, it holds just that
// subcommand: building the parser reflects over every command's struct,
// and a call that names its command up front (as agents' calls do) need
// not pay for the others. cmds gets each command's struct by name.
func newParser(cli *CLI, app *App, stdout, stderr io.Writer, only string, cmds map[string]any) (*kong.Kong, error) {
	opts := []kong.Option{
		kong.Name("bl"),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(exitRequest{c}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
		kong.Help(printHelp),
		kong.Bind(app),
		kong.Resolvers(envResolver(app)),
		kong.KindMapper(reflect.String, kong.MapperFunc(rawString)),
		kong.TypeMapper(reflect.TypeOf([]string(nil)), kong.MapperFunc(rawStrings)),
		kong.KindMapper(reflect.Int, decimalInt(strconv.IntSize)),
		kong.KindMapper(reflect.Int64, decimalInt(64)),
	}
	if only == "" {
		// Only bl --help prints it, and kong runs every help text through
		// its interpolation at each start: a named command need not pay
		// for this one, the longest.
		opts = append(opts, kong.Description(description))
	}
	for _, c := range commands {
		if only != "" && c.name != only {
			continue
		}
		var tags []string
		if c.hidden {
			tags = append(tags, `hidden:""`)
		}
		help := c.help
		if as := aliasesOf(c.name); len(as) > 0 { // bl --help lists them: "delete (rm)"
			tags = append(tags, `aliases:"`+strings.Join(as, ",")+`"`)
		}
		v := c.new()
		cmds[c.name] = v
		opts = append(opts, kong.DynamicCommand(c.name, help, "", v, tags...))
	}
	k, err := kong.New(cli, opts...)
	if err == nil {
		// Help and kong's own errors ("missing flags: --epoch=N") name
		// a value alike.
		placeholders(k.Model.Node)
	}
	return k, err
}

// envResolver reads a flag's variable (env:"BL_OWNER") from the App's
// environment, Getenv: kong itself reads the process's, which is the
// same one when bl runs as a process.
func envResolver(a *App) kong.Resolver {
	return kong.ResolverFunc(func(_ *kong.Context, _ *kong.Path, f *kong.Flag) (any, error) {
		for _, env := range f.Tag.Envs {
			if v := a.getenv(env); v != "" {
				return v, nil
			}
		}
		return nil, nil
	})
}

// globalsWithValue are the global flags that take the next argument as
// their value.
var globalsWithValue = map[string]bool{"--dir": true, "--actor": true, "--lock-timeout": true}

// commandIn returns the subcommand args name (an alias named by its
// command), looking past the global flags before it ("bl --dir D claim
// ..."), or "" when there is none. unknown is the word in the command's
// place when it names no command.
func commandIn(args []string) (name, unknown string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case globalsWithValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			if n := canonical(a); n != "" {
				return n, ""
			}
			return "", a
		}
	}
	return "", ""
}

// commandNamed reports whether name is a subcommand or an alias of one.
func commandNamed(name string) bool { return commandName(name) != "" }

// commandName is the subcommand name or alias answers to, or "".
func commandName(name string) string {
	for _, c := range commands {
		if c.name == name {
			return c.name
		}
	}
	return ""
}

const description = `A git-native, file-backed backlog for developers and fleets of coding agents.

Cards live in .backlog/ledger.jsonl, an append-only, checksummed event log
committed with your code. Claims are leases with a TTL and an epoch: two
agents never both win a card, a crashed agent's card comes back when its
lease expires, and a late agent is fenced out.

The agent loop:

    card=$(bl claim --owner $ME --ttl 10m --json)      # null when nothing is claimable
    id=$(echo "$card" | jq -r .id); epoch=$(echo "$card" | jq -r .claim_epoch)
    bl heartbeat --id $id --owner $ME --epoch $epoch   # every few minutes
    bl complete --id $id --owner $ME --epoch $epoch --note "merged in abc123"

or, in one process that does all of that around a command:

    bl run --owner $ME --ttl 10m --loop -- ./work-on-card.sh

Exit codes:

    0  success (also a claim that found nothing, and claim --wait or watch
       ended by SIGINT or SIGTERM)
    1  any other failure
    2  usage or invalid input (also an id prefix that names several cards:
       code ambiguous_id, the candidates listed)
    3  not found (card, or no backlog)
    4  conflict: stale epoch, not the owner, invalid transition, cycle, duplicate
       id, a request id reused for another request; --json's "code" tells
       them apart: "fenced" (your lease is gone: stop), "self_review" (you
       sent the card to review: another actor and owner must decide it; your
       work stands), "paths_held", "id_collision" (bl sync renamed the
       card, or its id was also created on the remote: use the id named),
       "conflict"
    5  lock busy: timed out waiting for .backlog/lock
    6  corrupt backlog (or written by a newer bl), or a file in .backlog that is
       a symbolic link out of it
    7  the claim arbiter (--arbiter, BL_ARBITER) could not be reached: nothing
       was written`

// exitRequest carries kong's exit code (after --help) out of Parse.
type exitRequest struct{ code int }

func hasJSONFlag(args []string) bool {
	for _, a := range args {
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// isNegativeNumber reports whether a is "-" followed by digits only.
func isNegativeNumber(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	for _, c := range a[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// normalizeArgs makes the command line friendlier before kong sees it: a
// bare "bl" or "bl help [command]" shows help, "bl --version" is bl
// version, and a negative number after
// a flag ("--priority -5") is joined to it, since kong would take "-5" for
// a short flag.
func normalizeArgs(args []string) []string {
	switch {
	case len(args) == 0:
		return []string{"--help"}
	case args[0] == "help":
		return append(append([]string{}, args[1:]...), "--help")
	case args[0] == "--version": // the flag most tools answer
		return append([]string{"version"}, args[1:]...)
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) && isNegativeNumber(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// maxScanWork bounds what kong's reading of a command line costs. Its
// scanner copies the queue of arguments still to read each time it reads
// a flag, and each time it takes a word after "--", so the work is about
// (flags + words after "--") × arguments: 20,000 flags took 25 s and
// 4.7 GB, 1,000 flags before 100,000 words 25 s and 2.4 GB. The bound
// passes 4,000 of them in a line of 4,000 arguments (under a second); no
// command needs near that many (a list flag takes at most 256 entries),
// and many words with a few flags before them cost next to nothing.
const maxScanWork = 1 << 24

// checkScanWork refuses, before kong reads it, a command line that would
// cost kong more than maxScanWork.
func checkScanWork(args []string) error {
	n, words := 0, false
	for _, a := range args {
		switch {
		case words:
			n++ // kong takes each word after "--" alone
		case a == "--":
			words = true
		case strings.HasPrefix(a, "-") && a != "-":
			n++
		}
	}
	if n*len(args) > maxScanWork {
		return usagef(fmt.Sprintf("%d arguments, %d of them flags or after \"--\": too many for one command line; split the call", len(args), n))
	}
	return nil
}

// Two shapes of the parser's errors that say more about its insides than
// about the mistake: a flag given no value, and a duration with no unit.
var (
	parseNoValue = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(--[a-z-]+): expected [a-z]+ value but got "EOL" \(<EOL>\)$`)
	})
	parseNoUnit = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(--[a-z-]+): expected duration but got "([^"]*)": time: missing unit in duration .*$`)
	})
)

// plainParseError says a parse error the way a person would.
func plainParseError(msg string) string {
	if m := parseNoValue().FindStringSubmatch(msg); m != nil {
		return m[1] + " needs a value"
	}
	if m := parseNoUnit().FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s %s: a duration needs a unit (%ss, %sm or %sh)", m[1], m[2], m[2], m[2], m[2])
	}
	return msg
}

// missingAll names everything the command line lacks, when the parse
// stopped at something missing: kong stops at the first kind (the
// required flags, then the arguments) and leaves the card to the command,
// so a person would learn them one run at a time. "" when err is no such
// error.
func missingAll(err error) string {
	var pe *kong.ParseError
	if !errors.As(err, &pe) || pe.Context == nil {
		return ""
	}
	msg := pe.Unwrap().Error()
	if !strings.HasPrefix(msg, "missing flags: ") && !strings.HasPrefix(msg, "expected \"") && !strings.HasPrefix(msg, "missing positional arguments ") {
		return ""
	}
	node := pe.Context.Selected()
	if node == nil {
		return ""
	}
	var missing []string
	cardArg, cardFlag := (*kong.Value)(nil), (*kong.Flag)(nil)
	if needsCard(node) {
		for _, v := range node.Positional {
			if v.Name == "id" {
				cardArg = v
			}
		}
		for _, f := range node.Flags {
			if f.Name == "id" {
				cardFlag = f
			}
		}
		if cardArg != nil && cardFlag != nil && !cardArg.Set && !cardFlag.Set {
			missing = append(missing, "<id> (or --id ID)")
		}
	} else if isNote(node) {
		// bl note ID TEXT: the card is the first word unless --id names it.
		for _, f := range node.Flags {
			if f.Name == "id" && !f.Set {
				missing = append(missing, "<id> (or --id ID)")
			}
		}
	}
	for _, v := range node.Positional {
		if v.Required && !v.Set {
			missing = append(missing, v.Summary())
		}
	}
	for _, f := range node.Flags {
		if f.Required && !f.Set {
			missing = append(missing, f.Summary())
		}
	}
	switch len(missing) {
	case 0:
		return ""
	case 1:
		return "missing " + missing[0]
	}
	return "missing " + strings.Join(missing[:len(missing)-1], ", ") + " and " + missing[len(missing)-1]
}

func isNote(node *kong.Node) bool {
	t := node.Target
	return t.IsValid() && t.Type() == reflect.TypeOf(NoteCmd{})
}

// needsCard reports whether the command node acts on one card it must be
// given (it embeds cardID, which checks that only when it runs).
func needsCard(node *kong.Node) bool {
	t := node.Target
	if !t.IsValid() {
		return false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	f, ok := t.Type().FieldByName("cardID")
	return ok && f.Anonymous && f.Type == reflect.TypeOf(cardID{})
}
