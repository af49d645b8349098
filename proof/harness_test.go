package proof

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// binDir holds the bl binaries the tests build, one per set of build tags.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bl-proof-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// stress reports whether the full-size runs were asked for.
func stress() bool { return os.Getenv("BL_STRESS") != "" }

// patience is how long a run may wait for something that must happen
// (every card done, processes parked): no budget of its own, so a slow
// machine only runs longer; it ends a tenth short of the test binary's
// deadline (go test -timeout), so that a hang is reported as a failure.
func patience(t testing.TB) time.Duration {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			return time.Until(end) * 9 / 10
		}
	}
	return time.Hour
}

// Build tags of the bl binaries the harnesses run.
const (
	tagsNone       = ""
	tagsBrokenLock = "bl_brokenlock"
	tagsFailpoints = "bl_failpoints"
)

type build struct {
	once sync.Once
	path string
	err  error
}

var builds sync.Map // tags -> *build

// blBinary builds bl with the given tags (once per test binary) and
// returns its path.
func blBinary(t testing.TB, tags string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(tags, &build{})
	b := v.(*build)
	b.once.Do(func() {
		name := "bl"
		if tags != "" {
			name += "-" + strings.ReplaceAll(tags, ",", "-")
		}
		b.path = filepath.Join(binDir, name)
		args := []string{"build", "-o", b.path}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		args = append(args, "github.com/bl-backlog/bl/cmd/bl")
		cmd := exec.Command(goTool(), args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go" // not on PATH: let exec report it
}

// blEnv is the environment bl processes run with: the test's own, minus
// any BL_ settings that would change what they do.
func blEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// fault is what happens to a bl process while it runs.
type fault int

const (
	noFault   fault = iota
	stopFault       // SIGSTOP after delay, SIGCONT after hold
	killFault       // SIGKILL after delay

	// stopHoldingLock stops the process at a moment it holds the backlog
	// lock, runs whileStopped, then continues it. Only meaningful when the
	// process is the only writer of its backlog.
	stopHoldingLock
)

// runOpts says how to run one process.
type runOpts struct {
	fault fault
	delay time.Duration // from start to the signal
	hold  time.Duration // how long a stopped process stays stopped
	env   []string      // extra environment, e.g. BL_FAILPOINT=after-write

	// gate, when set, holds the process stopped from its start until gate
	// returns, so that many processes can be let go at the same moment.
	gate func()

	// whileStopped runs while a stopHoldingLock process is stopped.
	whileStopped func()

	// started, when set, is given the process as soon as it has started.
	started func(p *os.Process)
}

// runner runs one bl binary against one backlog directory.
type runner struct {
	bin   string
	dir   string // the .backlog directory
	procs atomic.Int64
}

// newBacklog makes a temporary directory with an initialized backlog.
func newBacklog(t testing.TB, bin string) *runner {
	t.Helper()
	r := &runner{bin: bin, dir: filepath.Join(t.TempDir(), ".backlog")}
	if c := r.run("setup", runOpts{}, "init", "--json"); c.Exit != 0 {
		t.Fatalf("bl init: exit %d: %s", c.Exit, c.Stderr)
	}
	// Keep every event in ledger.jsonl: the harnesses judge the whole
	// history from that one file, so automatic compaction stays off.
	path := filepath.Join(r.dir, ledger.ConfigFile)
	cfg := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &cfg)
	}
	cfg["compact_bytes"] = -1
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// run starts bl with args (plus --dir), applies the fault, waits for it and
// records the call. It never fails the test: an unstartable process is
// recorded with exit code 127.
func (r *runner) run(worker string, o runOpts, args ...string) Call {
	r.procs.Add(1)
	c := Call{Worker: worker, Args: args}
	describe(&c)
	cmd := exec.Command(r.bin, append(append([]string(nil), args...), "--dir", r.dir)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = blEnv(o.env...)
	c.Start = time.Now()
	if err := cmd.Start(); err != nil {
		if o.gate != nil {
			o.gate()
		}
		c.End, c.Exit, c.Stderr = time.Now(), 127, []byte(err.Error())
		return c
	}
	if o.started != nil {
		o.started(cmd.Process)
	}
	if o.gate != nil {
		c.Stopped = cmd.Process.Signal(syscall.SIGSTOP) == nil
		o.gate()
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	exited := make(chan struct{})
	faulted := make(chan bool, 1)
	if o.fault == noFault {
		faulted <- false
	} else {
		go func() {
			if o.fault == stopHoldingLock {
				faulted <- r.stopHoldingLock(cmd.Process, exited, o.whileStopped)
				return
			}
			t := time.NewTimer(o.delay)
			defer t.Stop()
			select {
			case <-exited:
				faulted <- false
				return
			case <-t.C:
			}
			// os.Process signals through a pidfd: a process already
			// reaped is never confused with a new one of the same pid.
			if o.fault == killFault {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				faulted <- false
				return
			}
			if cmd.Process.Signal(syscall.SIGSTOP) != nil {
				faulted <- false
				return
			}
			// A stopped process cannot exit; exited only fires here when
			// the stop landed on a process that had already finished.
			hold := time.NewTimer(o.hold)
			select {
			case <-exited:
			case <-hold.C:
			}
			hold.Stop()
			_ = cmd.Process.Signal(syscall.SIGCONT)
			faulted <- true
		}()
	}
	_ = cmd.Wait()
	c.End = time.Now()
	close(exited)
	c.Stopped = <-faulted || c.Stopped
	c.Exit = cmd.ProcessState.ExitCode() // -1 when killed by a signal
	c.Stdout, c.Stderr = stdout.Bytes(), stderr.Bytes()
	return c
}

// stopHoldingLock watches the backlog's lock file and stops p the moment
// the lock is seen held, confirms p is stopped with the lock still held,
// runs whileStopped and continues p. It reports whether p was stopped
// holding the lock; when the lock was let go before the stop took, p is
// continued at once.
func (r *runner) stopHoldingLock(p *os.Process, exited <-chan struct{}, whileStopped func()) bool {
	f, err := os.OpenFile(filepath.Join(r.dir, ledger.LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false
	}
	defer f.Close()
	fd := int(f.Fd())
	held := func() bool {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			_ = syscall.Flock(fd, syscall.LOCK_UN)
			return false
		}
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	for {
		select {
		case <-exited:
			return false
		default:
		}
		if !held() {
			continue
		}
		if p.Signal(syscall.SIGSTOP) != nil {
			return false
		}
		for !processStopped(p.Pid) {
			select {
			case <-exited:
				return false
			default:
				runtime.Gosched()
			}
		}
		ok := held()
		if ok {
			whileStopped()
		}
		_ = p.Signal(syscall.SIGCONT)
		return ok
	}
}

// processStopped reports whether /proc says pid is stopped.
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces, so look after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}

// describe fills a call's Op, Card, Owner, Epoch and RequestID from its
// arguments.
func describe(c *Call) {
	if len(c.Args) > 0 {
		c.Op = c.Args[0]
	}
	for i := 1; i+1 < len(c.Args); i++ {
		v := c.Args[i+1]
		switch c.Args[i] {
		case "--id":
			c.Card = v
		case "--owner":
			c.Owner = v
		case "--epoch":
			c.Epoch, _ = strconv.ParseInt(v, 10, 64)
		case "--request-id":
			c.RequestID = v
		}
	}
}

// ledgerBytes reads the backlog's ledger.jsonl.
func (r *runner) ledgerBytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustRun runs a fault-free call and fails the test unless it exits 0.
func (r *runner) mustRun(t testing.TB, args ...string) Call {
	t.Helper()
	c := r.run("setup", runOpts{}, args...)
	if c.Exit != 0 {
		t.Fatalf("bl %s: exit %d: %s", strings.Join(args, " "), c.Exit, c.Stderr)
	}
	return c
}

// stats is the part of `bl stats --json` the harnesses read.
type stats struct {
	Cards    int            `json:"cards"`
	ByStatus map[string]int `json:"by_status"`
}

func parseStats(b []byte) (stats, error) {
	var s stats
	err := json.Unmarshal(b, &s)
	return s, err
}

// requestIDs is a source of unique request ids for one run.
type requestIDs struct {
	prefix string
	n      atomic.Int64
}

func (g *requestIDs) next(worker string) string {
	return fmt.Sprintf("%s-%s-%d", g.prefix, worker, g.n.Add(1))
}

// sleepCtx sleeps for d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
