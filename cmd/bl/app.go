package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"regexp"
	"strings"
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
	LockTimeout time.Duration `name:"lock-timeout" default:"10s" placeholder:"DUR" help:"How long to wait for the backlog lock."`
}

// CLI is the whole command line.
type CLI struct {
	Globals

	Init      InitCmd      `cmd:"" help:"Create a backlog (.backlog/) for this repository."`
	Create    CreateCmd    `cmd:"" help:"Add a card."`
	Show      ShowCmd      `cmd:"" help:"Show one card."`
	List      ListCmd      `cmd:"" help:"List cards."`
	Ready     ReadyCmd     `cmd:"" help:"List cards claimable now, in claim order."`
	Update    UpdateCmd    `cmd:"" help:"Edit a card's fields."`
	Claim     ClaimCmd     `cmd:"" help:"Take a lease on the best claimable card, or the given one."`
	Heartbeat HeartbeatCmd `cmd:"" help:"Renew your lease and report progress."`
	Release   ReleaseCmd   `cmd:"" help:"Give your claimed card back to the pool."`
	Reclaim   ReclaimCmd   `cmd:"" help:"Return expired leases (or one card, forced) to the pool."`
	Complete  CompleteCmd  `cmd:"" help:"Mark a card done."`
	Block     BlockCmd     `cmd:"" help:"Park a card with a reason."`
	Unblock   UnblockCmd   `cmd:"" help:"Return a blocked card to ready."`
	Reopen    ReopenCmd    `cmd:"" help:"Return a done card to ready."`
	Link      LinkCmd      `cmd:"" help:"Make one card depend on another."`
	Unlink    UnlinkCmd    `cmd:"" help:"Remove a dependency."`
	Stats     StatsCmd     `cmd:"" help:"Counts by status, claimable and expired cards, ledger size."`
	Export    ExportCmd    `cmd:"" help:"Render the backlog: markdown board, mermaid/dot graph, csv, json, jsonl, html."`
	Log       LogCmd       `cmd:"" help:"Print the event history, resumable by cursor."`
	Watch     WatchCmd     `cmd:"" help:"Stream events as they are appended (JSONL)."`
	Compact   CompactCmd   `cmd:"" help:"Fold the ledger into the snapshot."`
	Doctor    DoctorCmd    `cmd:"" help:"Check the ledger's integrity; --repair fixes a torn tail."`
	Version   VersionCmd   `cmd:"" help:"Print the bl version."`

	Sync        SyncCmd        `cmd:"" help:"Commit .backlog to git; --pull/--push exchange it with a remote."`
	MergeDriver MergeDriverCmd `cmd:"" name:"merge-driver" hidden:"" help:"Git merge driver for the ledger (set up by bl init)."`
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

Exit codes:

    0  success (also a claim that found nothing)
    1  any other failure
    2  usage or invalid input
    3  not found (card, or no backlog)
    4  conflict: stale epoch, not the owner, invalid transition, cycle, duplicate id
    5  lock busy: timed out waiting for .backlog/lock
    6  corrupt backlog (or written by a newer bl)`

// App is what commands run against: the parsed globals, the output streams,
// and the backlog, opened on first use.
type App struct {
	Globals
	Stdout, Stderr io.Writer
	ctx            context.Context
	now            func() time.Time
	backlog        *ledger.Backlog
	mutated        bool // the command wrote (or tried to write) an event
	synced         bool // the command went through git itself
}

// exitRequest carries kong's exit code (after --help) out of Parse.
type exitRequest struct{ code int }

func run(args []string, stdout, stderr io.Writer) (code int) {
	var cli CLI
	app := &App{Stdout: stdout, Stderr: stderr, now: time.Now}
	parser, err := kong.New(&cli,
		kong.Name("bl"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(exitRequest{c}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
		kong.Bind(app),
	)
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
	kctx, err := parser.Parse(normalizeArgs(args))
	if err != nil {
		app.JSON = cli.JSON || hasJSONFlag(args)
		return app.fail(usagef(err.Error() + " (see bl --help)"))
	}
	app.Globals = cli.Globals
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app.ctx = ctx
	if err := kctx.Run(); err != nil {
		return app.fail(err)
	}
	if app.mutated {
		app.autoSync()
	}
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

var negativeNumber = regexp.MustCompile(`^-[0-9]+$`)

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
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) && negativeNumber.MatchString(args[i+1]) {
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
	exit, code := classify(err)
	msg := err.Error()
	if a.JSON {
		writeJSONLine(a.Stderr, struct {
			Error    string `json:"error"`
			Code     string `json:"code"`
			ExitCode int    `json:"exit_code"`
			Hint     string `json:"hint,omitempty"`
		}{msg, code, exit, hint(code)})
		return exit
	}
	fmt.Fprintf(a.Stderr, "bl: %s\n", msg)
	if h := hint(code); h != "" {
		fmt.Fprintf(a.Stderr, "    %s\n", h)
	}
	return exit
}

// Open finds and opens the backlog once per run.
func (a *App) Open() (*ledger.Backlog, error) {
	if a.backlog != nil {
		return a.backlog, nil
	}
	dir, err := findBacklog(a.Dir)
	if err != nil {
		return nil, err
	}
	b, err := ledger.Open(dir, ledger.Options{Clock: a.now, LockTimeout: a.LockTimeout, Failpoint: failpoint,
		AllowNetworkFS: os.Getenv("BL_ALLOW_NETWORK_FS") == "1"})
	if err != nil {
		return nil, err
	}
	a.backlog = b
	return b, nil
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
	name := os.Getenv("USER")
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

// failpoint is nil except in crash-test builds (see failpoint.go).
var failpoint func(stage string)
