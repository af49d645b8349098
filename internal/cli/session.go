package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// Session runs bl command lines in this process against one open backlog,
// as bl mcp does for each tool call: the same flags, checks, --json output
// and error objects as the command line, without a process or a load per
// call. Its methods are safe for concurrent use.
type Session struct {
	// Owner is the lease owner the session acts as (bl mcp --owner), or
	// "" when each call names its own.
	Owner string

	ext     Extensions
	getenv  func(string) string // the environment of the App it came from
	globals []string            // --actor and --lock-timeout, before every command line
	dir     string              // --dir as given
	timeout time.Duration

	mu      sync.Mutex
	backlog *ledger.Backlog
}

// NewSession returns a session with a's globals; the backlog is found and
// opened on first use.
func NewSession(a *App) *Session {
	s := &Session{ext: a.ext, getenv: a.getenv, dir: a.Dir, timeout: a.LockTimeout}
	if a.Actor != "" {
		s.globals = append(s.globals, "--actor="+a.Actor)
	}
	s.globals = append(s.globals, "--lock-timeout="+a.LockTimeout.String())
	return s
}

// open opens the backlog once, and then gives each call the backlog with
// config.json as it stands (settings.go); until it exists every call fails
// as bl would (no_backlog), and a later call tries again.
func (s *Session) open() (*ledger.Backlog, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	warn := func(msg string) { fmt.Fprintf(os.Stderr, "bl: warning: %s\n", msg) }
	if s.backlog != nil {
		// Each call runs with config.json as it is when the call starts.
		s.backlog = Reloaded(s.backlog, warn, func(msg string) { fmt.Fprintf(os.Stderr, "bl: %s\n", msg) })
		return s.backlog, s.backlog.Dir(), nil
	}
	dir, err := findBacklog(s.dir)
	if err != nil {
		return nil, "", err
	}
	b, err := ledger.Open(dir, ledger.Options{Clock: time.Now, LockTimeout: s.timeout, Failpoint: failpointFrom(s.getenv),
		AllowNetworkFS: s.getenv("BL_ALLOW_NETWORK_FS") == "1", Warn: warn, SlowSync: slowSync(s.getenv, warn)})
	if err != nil {
		return nil, "", err
	}
	s.backlog = b
	return b, dir, nil
}

// Exec runs one command line (without the program name) with --json and
// returns what it printed on stdout and stderr and its exit code.
func (s *Session) Exec(ctx context.Context, args ...string) (stdout, stderr []byte, exit int) {
	var out, errOut bytes.Buffer
	// No Stdin: a call's input is its arguments (bl mcp's standard input
	// is the protocol).
	app := &App{Stdout: &out, Stderr: &errOut, Getenv: s.getenv, now: time.Now, ext: s.ext}
	app.JSON = true
	b, dir, err := s.open()
	if err != nil {
		exit := app.fail(err)
		return nil, errOut.Bytes(), exit
	}
	app.backlog, app.backlogDir = b, dir
	line := append(append(append([]string{}, s.globals...), "--json"), args...)
	app.args = line
	// The call ends with its request: a waiting claim claims nothing. It
	// runs the hooks of its own writes, as a command line does (runApp):
	// the calls share the handle, not what each wrote.
	app.ctx = ctx
	exit = runApp(app, line)
	return out.Bytes(), errOut.Bytes(), exit
}

// Close closes the backlog.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backlog == nil {
		return nil
	}
	return s.backlog.Close()
}

// Version is bl's version, as bl version prints it.
func Version() string { return version }
