package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/gofrs/flock"

	"github.com/bl-backlog/bl/ledger"
)

// DaemonCmd keeps one bl-git running for a clone, so that the owner
// commands through a claim arbiter run in it rather than each starting
// bl-git and connecting to the arbiter.
type DaemonCmd struct{}

func (DaemonCmd) Help() string {
	return `Serves this clone's owner commands through the claim arbiter from one
long-lived process. While it runs, a bl claim, heartbeat, release,
complete, block, fail, approve or reject that goes through the arbiter
(--arbiter, BL_ARBITER, .backlog/arbiter.json) is passed over a local
socket to this process, which runs it with its one open backlog and its one
connection to the arbiter, and answers with the command's output and exit
code. Without it each such command starts bl-git and connects anew; the
answers are the same, a call costs a few times more CPU. claim --wait and
watch still start bl-git.

The socket is .backlog/cache/daemon/sock, in a directory only you may
enter (0700; bl refuses one that is not yours or that others may open, or
a socket that is a link or not yours, and then starts bl-git as before).
Only your own processes are served, and bl talks only to a daemon of
yours (both checked on each connection on Linux). A call runs in the
caller's environment (BL_ACTOR, BL_ARBITER, ...); the arbiter is chosen as on the
command line, never from a tracked file. If the daemon ends while a call
runs, or is stopped (SIGSTOP, ^Z), the call exits 7 (code arbiter) and
names the request id it went under: retry with that --request-id. A
stopped daemon takes no new call.

Each call's arbiter comes from the caller's environment; started where no
arbiter is set, bl daemon warns (calls of a bl that sets none are not sent
to it). One daemon serves a clone: a second one exits 4.

It runs until SIGINT or SIGTERM, letting the calls under way finish.

Example:

    BL_ARBITER=nats://arbiter.internal:4222 bl daemon &
    bl claim --owner worker-1 --json      # answered by the daemon` + exitCodesHelp
}

func (c *DaemonCmd) gitWork(a *App) string { return "bl daemon" }

func (c *DaemonCmd) Run(a *App) error {
	if a.ext.Daemon == nil {
		return &gitMissingError{"bl daemon", "which this binary does not include"}
	}
	dir, err := a.findDir()
	if err != nil {
		return err
	}
	sock := daemonSocket(dir)
	if len(sock) > maxSocketPath {
		return ledger.Errorf(ledger.ErrInvalid, "the socket path %s is %d bytes, more than a unix socket takes (%d): run bl daemon in a clone at a shorter path", sock, len(sock), maxSocketPath)
	}
	s := NewSession(a)
	defer s.Close()
	if _, _, err := s.open(); err != nil {
		return err // a cache directory linked out of the backlog among others
	}
	if err := makeDaemonDir(filepath.Dir(sock)); err != nil {
		return err
	}
	// One daemon per clone: two started at once would each find no
	// socket, remove the other's and listen on their own. The lock is
	// held from the look for a running daemon until the socket listens;
	// the look itself finds one that serves. (A daemon whose socket was
	// removed, by git clean -x, serves no one: another may start.)
	lockPath := filepath.Join(filepath.Dir(sock), "lock")
	if fi, err := os.Lstat(lockPath); err == nil && !fi.Mode().IsRegular() {
		// A link a teammate committed there: opening it would create
		// the file it names. The directory is this user's alone now.
		if err := os.Remove(lockPath); err != nil {
			return err
		}
	}
	lk := flock.New(lockPath)
	if ok, err := lk.TryLock(); err != nil {
		return err
	} else if !ok {
		return ledger.Errorf(ledger.ErrConflict, "a bl daemon is starting in this clone (%s)", sock)
	}
	defer lk.Unlock()
	if f, _, err := dialDaemon(sock); err == nil {
		f.Close()
		return ledger.Errorf(ledger.ErrConflict, "a bl daemon already serves this clone (%s)", sock)
	}
	_ = os.Remove(sock) // a daemon that died left it, or it is no socket of ours
	// Each call chooses its arbiter from the caller's environment, so a
	// daemon started without one still serves callers that set one: warn,
	// do not refuse.
	as, aerr := a.arbiterSettings(remoteChoice{})
	return a.ext.Daemon(a.ctx, s, sock, func() {
		_ = lk.Unlock() // the socket listens: a second daemon finds it
		fmt.Fprintf(a.Stderr, "bl daemon: serving %s on %s\n", text(dir), text(sock))
		if aerr == nil && as.URL == "" {
			a.Warn("no claim arbiter is set here (--arbiter, BL_ARBITER, .backlog/arbiter.json): only the calls of a bl that sets one come to this daemon; the others run as without it")
		}
	})
}

// maxSocketPath is the longest unix socket path every system takes
// (sun_path is 104 bytes on macOS and the BSDs, 108 on Linux).
const maxSocketPath = 103

// daemonSocket is the socket of the clone whose backlog is dir: in the
// ignored cache, never a path a tracked file names.
func daemonSocket(dir string) string { return filepath.Join(dir, "cache", "daemon", "sock") }

// MaxDaemonRequest bounds one relayed request (a command line with its
// environment, as JSON): bl daemon reads no more, so a larger one is not
// sent.
const MaxDaemonRequest = 4 << 20

// daemonRequest is one command line a lean bl relays, with its
// environment; daemonReply is what it printed and its exit code, or why
// the daemon would not run it (then nothing ran).
type daemonRequest struct {
	Version string   `json:"version"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
}

type daemonReply struct {
	Refused string `json:"refused,omitempty"`
	Stdout  []byte `json:"stdout,omitempty"`
	Stderr  []byte `json:"stderr,omitempty"`
	Exit    int    `json:"exit"`
}

// DaemonRefusal is the daemonReply of a request bl daemon did not run:
// the caller's bl hands its command to bl-git.
func DaemonRefusal(why string) []byte {
	out, _ := json.Marshal(daemonReply{Refused: why})
	return out
}

// Relay runs one relayed command line (a daemonRequest) in this process,
// in the caller's environment, and returns the daemonReply. The call
// finishes even if ctx ends: it may have reached the arbiter.
func (s *Session) Relay(ctx context.Context, request []byte) []byte {
	var req daemonRequest
	var rep daemonReply
	switch err := json.Unmarshal(request, &req); {
	case err != nil:
		rep.Refused = "not a request: " + err.Error()
	case req.Version != binaryVersion():
		rep.Refused = "bl " + req.Version + " asked bl daemon " + binaryVersion()
	case !relayedCommands[relayedCommand(req.Args)]:
		rep.Refused = "bl daemon runs owner commands only"
	default:
		env := map[string]string{}
		for _, kv := range req.Env {
			if k, v, ok := cutEnv(kv); ok {
				env[k] = v
			}
		}
		rep.Stdout, rep.Stderr, rep.Exit = s.run(context.WithoutCancel(ctx), func(k string) string { return env[k] }, req.Args)
	}
	out, _ := json.Marshal(rep)
	return out
}

// relayedCommands are the commands a lean bl relays (gitWork sets
// relayable): bl daemon runs no other, one that runs until stopped (bl
// watch) would hold its end.
var relayedCommands = map[string]bool{"claim": true, "heartbeat": true, "release": true, "complete": true,
	"fail": true, "block": true, "approve": true, "reject": true}

func relayedCommand(args []string) string {
	name, _ := commandIn(normalizeArgs(args))
	return name
}

func cutEnv(kv string) (string, string, bool) {
	for i := 1; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}

// run runs one command line as given, in the environment getenv reads.
func (s *Session) run(ctx context.Context, getenv func(string) string, args []string) (stdout, stderr []byte, exit int) {
	var out, errOut bytes.Buffer
	app := &App{Stdout: &out, Stderr: &errOut, Getenv: getenv, now: time.Now, ext: s.ext, args: args}
	b, dir, err := s.open()
	if err != nil {
		app.JSON = hasJSONFlag(args)
		return nil, nil, app.fail(err)
	}
	app.backlog, app.backlogDir = b, dir
	app.ctx = ctx
	exit = runApp(app, args)
	return out.Bytes(), errOut.Bytes(), exit
}

// errDaemonGone: the daemon took the call, under request id rid, and
// ended or was stopped before answering.
type errDaemonGone struct {
	sock, rid string
	err       error
}

func (e *errDaemonGone) Error() string {
	what := fmt.Sprintf("ended before answering (%v)", e.err)
	if errors.Is(e.err, errDaemonStopped) {
		what = "was stopped before answering (SIGSTOP): while it stays stopped, calls go to bl-git"
	}
	return fmt.Sprintf("the bl daemon (%s) %s: the call may have reached the arbiter; retry with --request-id %s to find out", e.sock, what, e.rid)
}

var errDaemonStopped = errors.New("the bl daemon is stopped")

// readReply reads the daemon's answer to its end. It gives up once the
// daemon is stopped (SIGSTOP, ^Z of one in a terminal): it answers only
// when continued, and the caller's lease may not last that long.
func readReply(f *os.File, pid int) ([]byte, error) {
	var out bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		_ = f.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		n, err := f.Read(buf)
		out.Write(buf[:n])
		switch {
		case err == io.EOF:
			return out.Bytes(), nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if daemonStopped(pid) {
				return nil, errDaemonStopped
			}
		case err != nil:
			return nil, err
		}
	}
}

// withRequestID is args with a --request-id: the one given, or a new one
// added before any "--", so that a call cut off in the daemon can be
// retried under the id it went under.
func withRequestID(args []string) ([]string, string) {
	end := len(args)
	for i, arg := range args {
		if arg == "--" {
			end = i
			break
		}
		if v, ok := strings.CutPrefix(arg, "--request-id="); ok {
			return args, v
		}
		if arg == "--request-id" && i+1 < len(args) {
			return args, args[i+1]
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	rid := "bl-" + hex.EncodeToString(b[:])
	out := append(slices.Clone(args[:end]), "--request-id="+rid)
	return append(out, args[end:]...), rid
}

func (e *errDaemonGone) ArbiterDown() bool { return true }

// relay passes this command line to the clone's bl daemon, if one runs
// and may be trusted, and returns its exit code once it has printed what
// the daemon's run printed. ok is false when no daemon took the call
// (none runs, or it refused): nothing ran, and bl-git takes the command.
func (a *App) relay() (code int, ok bool) {
	dir, err := a.findDir()
	if err != nil {
		return 0, false
	}
	sock := daemonSocket(dir)
	if trustedDaemonDir(filepath.Dir(sock)) != nil {
		return 0, false
	}
	f, pid, err := dialDaemon(sock)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if daemonStopped(pid) {
		return 0, false // not taken: bl-git answers while it stays stopped
	}
	args, rid := withRequestID(a.args)
	req, _ := json.Marshal(daemonRequest{Version: binaryVersion(), Args: args, Env: os.Environ()})
	if len(req) >= MaxDaemonRequest {
		return 0, false // the daemon would not read it all: bl-git takes it
	}
	if _, err := f.Write(append(req, '\n')); err != nil {
		return 0, false // not taken: nothing ran
	}
	data, err := readReply(f, pid)
	var rep daemonReply
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil {
		a.JSON = hasJSONFlag(a.args)
		return a.fail(&errDaemonGone{sock: sock, rid: rid, err: err}), true
	}
	if rep.Refused != "" {
		return 0, false
	}
	_, _ = a.Stdout.Write(rep.Stdout)
	_, _ = a.Stderr.Write(rep.Stderr)
	return rep.Exit, true
}

var errNoDaemon = errors.New("no bl daemon on this system")
