package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/bl-backlog/bl/internal/supervisor"
	"github.com/bl-backlog/bl/ledger"
)

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
	settings       settings                   // config.json and arbiter.json, read once (settings.go)
	ext            Extensions                 // none in the lean bl, which hands their commands to bl-git
	args           []string                   // the command line as given, for the hand-over
	mutated        bool                       // the command wrote (or tried to write) an event
	standing       map[string]ledger.Standing // where printed cards stand (see stand)
	synced         bool                       // the command went through git itself
	relayable      bool                       // a running bl daemon may take the hand-over (cmd_daemon.go)

	lazySignals bool         // the agents' commands: signals are caught from the first wait (signals.go)
	signals     *lazySignals // the run's, when lazySignals

	onSynced   func(time.Duration) // given each append's fsync time (bl serve)
	appended   []*ledger.Event     // the events this command wrote, for hooks
	appendedMu sync.Mutex          // appended: bl run's heartbeats write from another goroutine
	warnedOnce sync.Map            // warnings given once per command (warnOnce)
}

// Main runs bl on args with what the binary links beyond the lean bl,
// ext, and returns the exit code. With ext.Git it is bl-git: git runs in
// this process and nothing is handed over. Without, the commands that
// need git (or another extension) are handed to bl-git (handover.go).
func Main(ext Extensions, args []string, stdout, stderr io.Writer) int {
	if supervisor.IsLauncher() {
		// Not a command line: bl run started this process to start its
		// commands (see internal/supervisor).
		return supervisor.RunLauncher()
	}
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
	stdout, stderr := app.Stdout, app.Stderr
	// kong's exit after --help, and a call relayed to bl daemon, end the
	// run with a code (exitRequest), whichever parser took the line.
	defer func() {
		if r := recover(); r != nil {
			er, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = er.code
		}
	}()
	if len(args) > 0 && args[0] == completeCommand {
		return app.completeWords(args[1:])
	}
	args = normalizeArgs(args)
	only, unknown := commandIn(args)
	if unknown != "" {
		app.JSON = hasJSONFlag(args)
		return app.fail(unknownCommand(unknown))
	}
	if cmd, g, ok := fastParse(only, args, app.getenv); ok {
		app.Globals = g
		// A claim that will wait catches signals from its start, as every
		// command did: its wait ends quietly on one (exit 0, README).
		app.lazySignals = !waits(cmd)
		return app.run(cmd, cmd.(interface{ Run(*App) error }).Run)
	}
	if err := checkScanWork(args); err != nil {
		app.JSON = hasJSONFlag(args)
		return app.fail(err)
	}
	cmds := map[string]any{}
	parser, err := newParser(&cli, app, stdout, stderr, only, cmds)
	if err != nil {
		fmt.Fprintln(stderr, "bl:", err)
		return exitError
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		app.JSON = cli.JSON || hasJSONFlag(args)
		see := "bl --help"
		if only != "" {
			see = "bl " + only + " --help"
		}
		msg := plainParseError(err.Error())
		if m := missingAll(err); m != "" {
			msg = m
		}
		return app.fail(usagef(msg + " (see " + see + ")"))
	}
	app.Globals = cli.Globals
	var cmd any
	if sel := kctx.Selected(); sel != nil {
		cmd = cmds[sel.Name]
	}
	app.lazySignals = readsOnly(cmd)
	return app.run(cmd, func(*App) error { return kctx.Run() })
}

// run runs the parsed command cmd (nil for none) with run: handed over to
// bl-git when it needs git and this bl has none, else here, with its
// hooks and the automatic sync after a write.
func (a *App) run(cmd any, run func(*App) error) int {
	if a.ext.Git == nil {
		// Hand over before anything is read or written: bl-git runs the
		// whole command, from the start.
		if gc, ok := cmd.(gitCommand); ok {
			if what := gc.gitWork(a); what != "" {
				return a.fail(a.handover(what))
			}
		}
	}
	parent := a.ctx // a session's call brings its own
	if parent == nil {
		parent = context.Background()
	}
	var ctx context.Context
	var stop func()
	if a.lazySignals {
		a.signals = &lazySignals{Context: parent}
		ctx, stop = a.signals, a.signals.release
	} else {
		ctx, stop = catchSignals(parent)
	}
	defer stop()
	// The command's writes are made with its context, which keeps their
	// events for its hooks: this call's, whoever else shares the backlog
	// handle (bl mcp's tool calls, bl serve's board).
	a.ctx = ledger.OnAppended(ctx, a.keepAppended)
	if err := run(a); err != nil {
		// Events a failed command made durable (a claim whose push
		// failed) still fire their hooks.
		code := a.fail(err)
		a.runHooksAfter()
		return code
	}
	if a.mutated {
		a.autoSync()
	}
	a.runHooksAfter()
	return exitOK
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
	// A directory findDir found had its links checked there (the owner
	// commands read arbiter.json first); otherwise findDir less its link
	// check: ledger.Open makes the same one.
	dir, err := a.backlogDir, error(nil)
	checked := dir != ""
	if dir == "" {
		dir, err = findBacklogDir(a.Dir)
	}
	if err != nil {
		return nil, err
	}
	b, err := ledger.Open(dir, ledger.Options{Clock: a.now, LockTimeout: a.LockTimeout, Failpoint: failpointFrom(a.getenv),
		AllowNetworkFS: a.getenv("BL_ALLOW_NETWORK_FS") == "1", Warn: a.Warn,
		Interrupted: a.stopAsked,
		SlowSync:    slowSync(a.getenv, a.Warn), Synced: a.onSynced, Config: a.settings.config, LinksChecked: checked})
	if err != nil {
		return nil, err
	}
	a.warnNoAttributes(dir)
	a.backlog, a.backlogDir = b, dir
	return b, nil
}

// slowSync is BL_SLOW_FSYNC, the fsync time past which an append warns: a
// Go duration, or "off"; unset, ledger.DefaultSlowSync. A value that does
// not read is a warning, and the default stands.
func slowSync(getenv func(string) string, warn func(string)) time.Duration {
	v := getenv("BL_SLOW_FSYNC")
	if v == "" {
		return 0
	}
	if v == "off" {
		return -1
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		warn(fmt.Sprintf("BL_SLOW_FSYNC=%q is not a positive duration (1s, 250ms) or off; warning past %s", v, ledger.DefaultSlowSync))
		return 0
	}
	return d
}

// keepAppended records the events of a write, under the writers' lock.
func (a *App) keepAppended(evs []*ledger.Event) {
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
