package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bl-backlog/bl/ledger"
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
		kong.Description(description),
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
	return kong.New(cli, opts...)
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
    2  usage or invalid input
    3  not found (card, or no backlog)
    4  conflict: stale epoch, not the owner, invalid transition, cycle, duplicate
       id, a request id reused for another request
    5  lock busy: timed out waiting for .backlog/lock
    6  corrupt backlog (or written by a newer bl), or a file in .backlog that is
       a symbolic link out of it`

// App is what commands run against: the parsed globals, the standard
// streams and the environment, and the backlog, opened on first use.
// Commands read input and environment variables through Stdin and Getenv,
// never os.Stdin and os.Getenv, so a test can run them in this process.
type App struct {
	Globals
	Stdin          io.Reader // "--body -", bl import -, bl run's command, bl webhook; nil reads as empty
	Stdout, Stderr io.Writer
	Getenv         func(key string) string // nil: an empty environment
	ctx            context.Context
	now            func() time.Time
	backlog        *ledger.Backlog
	backlogDir     string                     // found by findDir
	ext            Extensions                 // none in the lean bl, which hands their commands to bl-git
	args           []string                   // the command line as given, for the hand-over
	mutated        bool                       // the command wrote (or tried to write) an event
	standing       map[string]ledger.Standing // where printed cards stand (see stand)
	synced         bool                       // the command went through git itself

	onAppended func([]*ledger.Event) // replaces keeping appended (bl serve)
	appended   []*ledger.Event       // the events this command wrote, for hooks
	appendedMu sync.Mutex            // appended: bl run's heartbeats write from another goroutine
}

// exitRequest carries kong's exit code (after --help) out of Parse.
type exitRequest struct{ code int }

// Main runs bl on args with what the binary links beyond the lean bl,
// ext, and returns the exit code. With ext.Git it is bl-git: git runs in
// this process and nothing is handed over. Without, the commands that
// need git (or another extension) are handed to bl-git (handover.go).
func Main(ext Extensions, args []string, stdout, stderr io.Writer) int {
	if ext.Git != nil {
		// The mark of a hand-over is for this process only, not for the
		// bl processes git may start from here (hooks).
		os.Unsetenv(handedOverEnv)
		checkHandoverVersion(args, stderr)
	}
	tuneGC()
	return runApp(&App{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, now: time.Now, ext: ext, args: args}, args)
}

// runApp runs one command line on app, which may come with its backlog
// already open (see Session).
func runApp(app *App, args []string) (code int) {
	var cli CLI
	stdout, stderr, git := app.Stdout, app.Stderr, app.ext.Git
	if len(args) > 0 && args[0] == completeCommand {
		return app.completeWords(args[1:])
	}
	args = normalizeArgs(args)
	only, unknown := commandIn(args)
	if unknown != "" {
		app.JSON = hasJSONFlag(args)
		return app.fail(unknownCommand(unknown))
	}
	cmds := map[string]any{}
	parser, err := newParser(&cli, app, stdout, stderr, only, cmds)
	if err != nil {
		fmt.Fprintln(stderr, "bl:", err)
		return exitError
	}
	defer func() {
		if r := recover(); r != nil {
			er, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = er.code
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		app.JSON = cli.JSON || hasJSONFlag(args)
		see := "bl --help"
		if only != "" {
			see = "bl " + only + " --help"
		}
		return app.fail(usagef(err.Error() + " (see " + see + ")"))
	}
	app.Globals = cli.Globals
	if git == nil {
		// Hand over before anything is read or written: bl-git runs the
		// whole command, from the start.
		if sel := kctx.Selected(); sel != nil {
			if gc, ok := cmds[sel.Name].(gitCommand); ok {
				if what := gc.gitWork(app); what != "" {
					return app.fail(app.handover(what))
				}
			}
		}
	}
	parent := app.ctx // a session's call brings its own
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	app.ctx = ctx
	if err := kctx.Run(); err != nil {
		// Events a failed command made durable (a claim whose push
		// failed) still fire their hooks.
		code := app.fail(err)
		app.runHooksAfter()
		return code
	}
	if app.mutated {
		app.autoSync()
	}
	app.runHooksAfter()
	return exitOK
}

func hasJSONFlag(args []string) bool {
	for _, a := range args {
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// tuneGC makes the collector suit a short-lived command: most calls
// allocate a few megabytes and exit, so collecting at the default 4 MB
// heap only burns CPU. The collector runs at ten times the live heap
// instead, and the memory limit keeps the few large calls (list --json of
// 100k cards, a long watch) near what they need. GOGC and GOMEMLIMIT in
// the environment still win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(1000)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
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
// bare "bl" or "bl help [command]" shows help, and a negative number after
// a flag ("--priority -5") is joined to it, since kong would take "-5" for
// a short flag.
func normalizeArgs(args []string) []string {
	switch {
	case len(args) == 0:
		return []string{"--help"}
	case args[0] == "help":
		return append(append([]string{}, args[1:]...), "--help")
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

// fail reports err on stderr, as text or as a JSON object, and returns its
// exit code.
func (a *App) fail(err error) int {
	exit, code := classify(err, a.ext.Git)
	msg := err.Error()
	h := hint(code)
	var eh interface{ Hint() string }
	if errors.As(err, &eh) {
		h = eh.Hint()
	}
	if a.JSON {
		writeJSONLine(a.Stderr, struct {
			Error    string `json:"error"`
			Code     string `json:"code"`
			ExitCode int    `json:"exit_code"`
			Hint     string `json:"hint,omitempty"`
		}{msg, code, exit, h})
		return exit
	}
	fmt.Fprintf(a.Stderr, "bl: %s\n", text(msg))
	if h != "" {
		fmt.Fprintf(a.Stderr, "    %s\n", h)
	}
	return exit
}

// Warn prints a warning on stderr (the ledger's, or a command's). Under --json it is a
// JSON object, so stderr stays machine-readable.
func (a *App) Warn(msg string) {
	if a.JSON {
		writeJSONLine(a.Stderr, struct {
			Warning string `json:"warning"`
		}{msg})
		return
	}
	fmt.Fprintf(a.Stderr, "bl: warning: %s\n", text(msg))
}

// openChecked opens the backlog (Open) once check, the last check of the
// command's flags, passed; it returns check's error otherwise.
func (a *App) openChecked(check error) (*ledger.Backlog, error) {
	if check != nil {
		return nil, check
	}
	return a.Open()
}

// Open finds and opens the backlog once per run.
func (a *App) Open() (*ledger.Backlog, error) {
	if a.backlog != nil {
		return a.backlog, nil
	}
	dir, err := a.findDir()
	if err != nil {
		return nil, err
	}
	b, err := ledger.Open(dir, ledger.Options{Clock: a.now, LockTimeout: a.LockTimeout, Failpoint: failpointFrom(a.getenv),
		AllowNetworkFS: a.getenv("BL_ALLOW_NETWORK_FS") == "1", Warn: a.Warn, Appended: a.keepAppended})
	if err != nil {
		return nil, err
	}
	a.warnNoAttributes(dir)
	a.backlog = b
	return b, nil
}

// keepAppended records the events of a write, under the writers' lock.
func (a *App) keepAppended(evs []*ledger.Event) {
	if a.onAppended != nil {
		a.onAppended(evs)
		return
	}
	a.appendedMu.Lock()
	a.appended = append(a.appended, evs...)
	a.appendedMu.Unlock()
}

// findDir finds the backlog directory once per run.
func (a *App) findDir() (string, error) {
	if a.backlogDir != "" {
		return a.backlogDir, nil
	}
	dir, err := findBacklog(a.Dir)
	if err == nil {
		a.backlogDir = dir
	}
	return dir, err
}

// Mutation stamps a write with the actor and an optional request id.
func (a *App) Mutation(requestID string) ledger.Mutation {
	a.mutated = true
	return ledger.Mutation{Actor: a.actor(), RequestID: requestID}
}

func (a *App) actor() string {
	if a.Actor != "" {
		return a.Actor
	}
	name := a.getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if host = strings.SplitN(host, ".", 2)[0]; host == "" {
		host = "localhost"
	}
	if name == "" {
		name = "unknown"
	}
	return name + "@" + host
}

// fencedOwner is the owner an optionally fenced call (complete, block)
// checks: --owner, or the actor when only --epoch was given, or nobody.
func (a *App) fencedOwner(owner string, epoch int64) string {
	if owner == "" && epoch != 0 {
		return a.actor()
	}
	return owner
}

// Owner is the lease owner for claim and friends: --owner, else the actor.
func (a *App) Owner(flag string) string {
	if flag != "" {
		return flag
	}
	return a.actor()
}

// noOwnerGiven explains a fenced heartbeat or release that ran without
// --owner: the actor stood in for the owner, and the card is someone
// else's (or nobody's), which is not "your lease is gone".
func (a *App) noOwnerGiven(b *ledger.Backlog, flag, id string, err error) error {
	if flag != "" || !errors.Is(err, ledger.ErrFenced) {
		return err
	}
	hint := "pass --owner (and --epoch) as claim printed them"
	c, gerr := b.Get(id)
	if gerr != nil || c.Status != ledger.StatusClaimed {
		return hinted{ledger.Errorf(ledger.ErrFenced, "no --owner given, and %s is not claimed by anyone (the actor %s stood in for the owner)", id, a.actor()), hint}
	}
	return hinted{ledger.Errorf(ledger.ErrFenced, "no --owner given, and the actor %s does not hold %s: it is held by %s at epoch %d (pass --owner %s --epoch %d if that is you)",
		a.actor(), id, c.ClaimOwner, c.ClaimEpoch, c.ClaimOwner, c.ClaimEpoch), hint}
}

// getenv reads the environment the command runs in (Getenv).
func (a *App) getenv(key string) string {
	if a.Getenv == nil {
		return ""
	}
	return a.Getenv(key)
}

// stdin is the command's standard input (Stdin).
func (a *App) stdin() io.Reader {
	if a.Stdin == nil {
		return strings.NewReader("")
	}
	return a.Stdin
}
