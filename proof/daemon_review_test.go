package proof

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
	"github.com/bl-backlog/bl/internal/testbin"
)

// fakeDaemon listens on path as something other than the clone's bl
// daemon would: it keeps the first line each connection sends and answers
// that the command succeeded, with terminal escapes in its output.
func fakeDaemon(t *testing.T, path string) <-chan string {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan string, 16)
	out := base64.StdEncoding.EncodeToString([]byte("\x1b]0;owned\x07\x1b[2Jclaimed\n"))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			select {
			case got <- line:
			default:
			}
			_, _ = c.Write([]byte(`{"stdout":"` + out + `","exit":0}`))
			c.Close()
		}
	}()
	return got
}

// TestDaemonSocketLinkNotDialled: the socket path is in the clone, so its
// files can make it a link (git checks out a tracked symlink
// .backlog/cache/daemon/sock, in a directory that is 0700 under umask 077
// or once bl daemon ran). bl neither sends the command line and its
// environment to what the link names nor prints the answer as its own,
// and bl daemon does not take the link's listener for a daemon: it serves
// in the link's place.
func TestDaemonSocketLinkNotDialled(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "H1", "--title", "linked"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	sockDir := filepath.Join(r.dir, "cache", "daemon")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(t.TempDir(), "s")
	got := fakeDaemon(t, evil)
	if err := os.Symlink(evil, filepath.Join(sockDir, "sock")); err != nil {
		t.Fatal(err)
	}
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL(), "BL_GIT=/nonexistent/bl-git", "SECRET_TOKEN=hunter2"}}
	c := r.run("w", env, "claim", "--owner", "w", "--id", "H1", "--json")
	if c.Exit == 0 || !strings.Contains(string(c.Stderr), "bl-git") {
		t.Errorf("a claim with the socket a link: exit %d, stdout %q, stderr %q (want bl-git's hand-over, which is missing here)", c.Exit, c.Stdout, c.Stderr)
	}

	startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	if c := r.run("w", env, "claim", "--owner", "w", "--id", "H1", "--json"); c.Exit != 0 || !strings.Contains(string(c.Stdout), `"claim_owner": "w"`) {
		t.Errorf("a claim through the daemon that took the link's place: exit %d, stdout %q, stderr %q", c.Exit, c.Stdout, c.Stderr)
	}
	select {
	case line := <-got:
		t.Errorf("the socket the link names was sent %d bytes (SECRET_TOKEN in them: %v)", len(line), strings.Contains(line, "hunter2"))
	default:
	}
}

// TestDaemonSocketOfAnotherUserNotDialled: a socket in the directory that
// another user made (root can put one there) is not taken for this user's
// daemon.
func TestDaemonSocketOfAnotherUserNotDialled(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give the socket another owner")
	}
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "H1", "--title", "other"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	sockDir := filepath.Join(r.dir, "cache", "daemon")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "sock")
	got := fakeDaemon(t, sock)
	if err := os.Lchown(sock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL(), "BL_GIT=/nonexistent/bl-git"}}
	c := r.run("w", env, "claim", "--owner", "w", "--id", "H1", "--json")
	if c.Exit == 0 || !strings.Contains(string(c.Stderr), "bl-git") {
		t.Errorf("a claim with another user's socket: exit %d, stdout %q, stderr %q", c.Exit, c.Stdout, c.Stderr)
	}
	select {
	case <-got:
		t.Errorf("another user's socket was sent the command")
	default:
	}
}

// TestDaemonDirLinkNotFollowed: a socket directory the clone's files make
// a link (a tracked symlink .backlog/cache/daemon) is refused before
// anything follows it: bl daemon does not chmod what it names.
func TestDaemonDirLinkNotFollowed(t *testing.T) {
	bl := blGitBinary(t)
	r := newBacklog(t, bl)
	victim := filepath.Join(t.TempDir(), "public")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(r.dir, "cache", "daemon")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bl, "daemon")
	cmd.Dir, cmd.Env = filepath.Dir(r.dir), blEnv()
	out, err := cmd.CombinedOutput() // it refuses, or serves until the cleanup kills it
	if err == nil || !strings.Contains(string(out), "link") {
		t.Errorf("bl daemon with its socket directory a link: %v %s", err, out)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bl daemon changed the mode of the directory the link names: %v %v", fi.Mode().Perm(), err)
	}
}

var fpGit struct {
	once sync.Once
	path string
	err  error
}

// blGitFailpoints builds bl-git with the ledger's failpoints.
func blGitFailpoints(t *testing.T) string {
	t.Helper()
	fpGit.once.Do(func() {
		fpGit.path = filepath.Join(binDir, "bl-git-failpoints")
		args := []string{"build", "-tags", tagsFailpoints, "-o", fpGit.path, "github.com/bl-backlog/bl/cmd/bl-git"}
		if out, err := exec.Command(goTool(), args...).CombinedOutput(); err != nil {
			fpGit.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if fpGit.err != nil {
		t.Fatal(fpGit.err)
	}
	return fpGit.path
}

// runAsync runs a bl call in the background.
func runAsync(r *runner, o runOpts, args ...string) <-chan Call {
	done := make(chan Call, 1)
	go func() { done <- r.run("w", o, args...) }()
	return done
}

// waitCall waits up to d for a call; ok is false if it still runs.
func waitCall(done <-chan Call, d time.Duration) (Call, bool) {
	select {
	case c := <-done:
		return c, true
	case <-time.After(d):
		return Call{}, false
	}
}

// TestDaemonStoppedNotWaitedOn: a bl daemon stopped (SIGSTOP, ^Z of a
// daemon in a terminal) does not hold the clone's owner commands: a call
// made while it is stopped is answered without it, rather than wait for
// as long as it stays stopped (its lease would run out meanwhile).
func TestDaemonStoppedNotWaitedOn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "S1", "--title", "stopped"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	d := startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	if err := d.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for !processStopped(d.Process.Pid) {
		time.Sleep(10 * time.Millisecond)
	}
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL()}}
	done := runAsync(r, env, "claim", "--owner", "w", "--id", "S1", "--json")
	// Far beyond what the call takes without a daemon: only a call that
	// waits for the daemon to go on is still running then.
	c, ok := waitCall(done, 60*time.Second)
	if !ok {
		t.Errorf("a claim waited on a stopped bl daemon for 60s")
		_ = d.Process.Signal(syscall.SIGCONT)
		c = <-done
	}
	if c.Exit != 0 {
		t.Errorf("the claim made while the daemon is stopped: exit %d %s", c.Exit, c.Stderr)
	}
}

// TestDaemonStoppedMidCall: a bl daemon stopped after its write of a
// relayed claim (the arbiter took it, the clone's ledger holds it) and
// then killed: the caller ends with exit 7 while the daemon is stopped,
// names the request id its call went under even though it gave none, and
// a retry with that id answers with the card claimed, not a second one.
func TestDaemonStoppedMidCall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bl := blGitBinary(t)
	fp := blGitFailpoints(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	for _, id := range []string{"M1", "M2"} {
		if c := r.run("seed", runOpts{}, "create", "--id", id, "--title", "mid-call"); c.Exit != 0 {
			t.Fatalf("create: %s", c.Stderr)
		}
	}
	d := startDaemon(t, fp, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL(), "BL_FAILPOINT=after-write", "BL_FAILPOINT_ACTION=stop"))
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL()}}
	done := runAsync(r, env, "claim", "--owner", "w", "--json")
	for i := 0; !processStopped(d.Process.Pid); i++ {
		if i > 6000 {
			t.Fatal("the daemon never reached its failpoint")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, ok := waitCall(done, 60*time.Second)
	_ = d.Process.Kill()
	_ = d.Wait()
	if !ok {
		t.Errorf("the caller waited on a stopped bl daemon for 60s")
		c = <-done
	}
	if c.Exit != 7 || c.ErrorCode() != "arbiter" {
		t.Fatalf("a call whose daemon stopped and died: exit %d %s", c.Exit, c.Stderr)
	}
	m := regexp.MustCompile(`--request-id[ =]"?([A-Za-z_.-]*[0-9][A-Za-z0-9_.-]*)`).FindSubmatch(c.Stderr)
	if m == nil {
		t.Fatalf("the caller gave no request id and was not told the one its call went under: %s", c.Stderr)
	}
	retry := r.run("w", env, "claim", "--owner", "w", "--json", "--request-id", string(m[1]))
	if retry.Exit != 0 {
		t.Fatalf("the retry with %s: exit %d %s", m[1], retry.Exit, retry.Stderr)
	}
	data, err := os.ReadFile(filepath.Join(r.dir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(`"op":"claim"`)); n != 1 {
		t.Errorf("%d claims in the ledger after a retry of one call:\n%s", n, data)
	}
}

// TestDaemonEndsWithIdleConnection: SIGTERM ends bl daemon while a
// connection has sent no command line (or part of one): only calls under
// way are let finish.
func TestDaemonEndsWithIdleConnection(t *testing.T) {
	bl := blGitBinary(t)
	r := newBacklog(t, bl)
	d := startDaemon(t, bl, filepath.Dir(r.dir), blEnv())
	sock := filepath.Join(r.dir, "cache", "daemon", "sock")
	idle, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	part, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer part.Close()
	if _, err := part.Write([]byte(`{"version":"`)); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	time.Sleep(100 * time.Millisecond) // let it accept both
	if err := d.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Errorf("bl daemon still runs 60s after SIGTERM, held by a connection that sent no command")
		idle.Close()
		part.Close()
		<-exited
	}
}

// TestDaemonRunsOwnerCommandsOnly: the socket takes the owner commands the
// lean bl sends it, not any command line: one that runs until stopped
// (bl watch) would hold a connection and bl daemon's end for ever.
func TestDaemonRunsOwnerCommandsOnly(t *testing.T) {
	bl := blGitBinary(t)
	r := newBacklog(t, bl)
	startDaemon(t, bl, filepath.Dir(r.dir), blEnv())
	v := r.run("v", runOpts{}, "version", "--json")
	var ver struct{ Version string }
	if err := json.Unmarshal(v.Stdout, &ver); err != nil || ver.Version == "" {
		t.Fatalf("bl version --json: %s %v", v.Stdout, err)
	}
	c, err := net.Dial("unix", filepath.Join(r.dir, "cache", "daemon", "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := json.Marshal(map[string]any{"version": ver.Version, "args": []string{"watch", "--dir", r.dir}, "env": []string{}})
	if _, err := c.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	data, err := io.ReadAll(c)
	var rep struct{ Refused string }
	if err != nil || json.Unmarshal(data, &rep) != nil || rep.Refused == "" {
		t.Errorf("bl watch sent to bl daemon: %q %v (want it refused)", data, err)
	}
}

// TestArbiterRunStopsWhileHeartbeatHangs: a heartbeat of bl run that
// neither lands nor fails (here it waits for the backlog lock, held by a
// bl stopped in the middle of a write of this clone) is a lease not
// renewed: the command is stopped before the lease it last renewed runs
// out, not once the heartbeat gives up.
func TestArbiterRunStopsWhileHeartbeatHangs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bl := blGitBinary(t)
	fpBL := blBinary(t, tagsFailpoints)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "R1", "--title", "supervised"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	work := t.TempDir()
	script := `trap 'date +%s%N > died; exit 143' TERM; echo $$ > pid; while :; do sleep 0.05; done`
	cmd := exec.Command(bl, "run", "--dir", r.dir, "--owner", "agent-1", "--id", "R1", "--ttl", "6s", "--grace", "500ms", "--", "sh", "-c", script)
	cmd.Dir = work
	cmd.Env = blEnv("BL_ARBITER=" + srv.URL())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	waitFor(t, filepath.Join(work, "pid"), exited, &stderr)

	// A bl of this clone stops holding the backlog lock.
	holder := exec.Command(fpBL, "create", "--dir", r.dir, "--id", "Z1", "--title", "holder")
	holder.Env = blEnv("BL_FAILPOINT=after-write", "BL_FAILPOINT_ACTION=stop")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	}()
	for i := 0; !processStopped(holder.Process.Pid); i++ {
		if i > 6000 {
			t.Fatal("the lock holder never stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The lease as it was last renewed: the last claim or heartbeat of R1
	// in the ledger (read without the lock), plus the TTL.
	lastRenewal := func() time.Time {
		data, _ := os.ReadFile(filepath.Join(r.dir, "ledger.jsonl"))
		var last time.Time
		for _, line := range bytes.Split(data, []byte("\n")) {
			var e struct {
				At   time.Time `json:"at"`
				Op   string    `json:"op"`
				Card string    `json:"card"`
			}
			if json.Unmarshal(line, &e) == nil && e.Card == "R1" && (e.Op == "claim" || e.Op == "heartbeat") && e.At.After(last) {
				last = e.At
			}
		}
		return last
	}
	expires := lastRenewal().Add(6 * time.Second)
	time.Sleep(time.Until(expires) + 500*time.Millisecond)
	if got := lastRenewal().Add(6 * time.Second); got.After(expires) {
		t.Fatalf("a heartbeat landed while the lock holder was stopped (lease to %s)", got)
	}
	raw, err := os.ReadFile(filepath.Join(work, "died"))
	if err != nil {
		t.Fatalf("the lease ran out at %s and the command still runs (no SIGTERM):\n%s", expires.Format(time.RFC3339Nano), stderr.String())
	}
	ns, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if died := time.Unix(0, ns); !died.Before(expires) {
		t.Errorf("the command got SIGTERM at %s, after its lease ran out at %s:\n%s", died.Format(time.RFC3339Nano), expires.Format(time.RFC3339Nano), stderr.String())
	}
}

// TestDaemonEndLeavesAnothersSocket: a daemon whose socket was removed
// (git clean -x removes the ignored cache) while it ran, and another
// started in its place, removes on its end only a socket of its own.
func TestDaemonEndLeavesAnothersSocket(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "C1", "--title", "cleaned"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	sock := filepath.Join(r.dir, "cache", "daemon", "sock")
	old := startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	_ = old.Process.Signal(syscall.SIGTERM)
	_ = old.Wait()
	if _, err := os.Lstat(sock); err != nil {
		t.Errorf("the old daemon's end removed the new daemon's socket: %v", err)
	}
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL(), "BL_GIT=/nonexistent/bl-git"}}
	if c := r.run("w", env, "claim", "--owner", "w", "--id", "C1", "--json"); c.Exit != 0 {
		t.Errorf("a claim with the new daemon serving: exit %d %s", c.Exit, c.Stderr)
	}
}

// TestDaemonSaysPathsPlainly: the clone's path is printed without the
// control characters its name may hold.
func TestDaemonSaysPathsPlainly(t *testing.T) {
	bl := blGitBinary(t)
	root := filepath.Join(t.TempDir(), "a\x1b[2Jb")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &runner{bin: bl, dir: filepath.Join(root, ".backlog")}
	if c := r.run("setup", runOpts{}, "init", "--json"); c.Exit != 0 {
		t.Fatalf("bl init: exit %d: %s", c.Exit, c.Stderr)
	}
	cmd := exec.Command(bl, "daemon")
	cmd.Dir, cmd.Env = root, blEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	if strings.ContainsRune(line, 0x1b) || !strings.Contains(line, "serving") {
		t.Errorf("bl daemon said %q", line)
	}
}

// TestDaemonOutageAnsweredTogether: while the arbiter does not answer (a
// host that takes the connection and says nothing, so each dial waits out
// the arbiter's timeout), the calls bl daemon runs at once all learn it
// from one dial, rather than each wait for the dials of those before it in
// turn (the sixth of six callers waited 18 s).
func TestDaemonOutageAnsweredTogether(t *testing.T) {
	bl := blGitBinary(t)
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "O1", "--title", "outage"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	url := "nats://" + ln.Addr().String()
	startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+url))
	env := runOpts{env: []string{"BL_ARBITER=" + url, "BL_GIT=/nonexistent/bl-git"}}
	const n = 6
	var wg sync.WaitGroup
	calls := make([]Call, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			calls[i] = r.run("w", env, "heartbeat", "O1", "--owner", "w", "--epoch", "1", "--json")
		}()
	}
	wg.Wait()
	for _, c := range calls {
		if c.Exit != 7 {
			t.Errorf("a heartbeat with the arbiter silent: exit %d %s", c.Exit, c.Stderr)
		}
	}
	mu.Lock()
	dials := len(held)
	mu.Unlock()
	if dials > 2 {
		t.Errorf("%d calls at once dialled the silent arbiter %d times, one after the other", n, dials)
	}
}

// TestArbiterRunOutcomeRetryHearsSignals: while bl run tries again to
// record an outcome the arbiter cannot take, SIGTERM still ends it (exit 7:
// the outcome is not recorded, the lease runs out), rather than be ignored
// until the lease's end.
func TestArbiterRunOutcomeRetryHearsSignals(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "R1", "--title", "supervised"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	work := t.TempDir()
	script := `echo $$ > pid; while [ ! -e go ]; do sleep 0.05; done; exit 0`
	cmd := exec.Command(bl, "run", "--dir", r.dir, "--owner", "agent-1", "--id", "R1", "--ttl", "10m", "--grace", "500ms", "--", "sh", "-c", script)
	cmd.Dir = work
	cmd.Env = blEnv("BL_ARBITER=" + srv.URL())
	var stderr testbin.Output
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(work, "pid")); err == nil {
			break
		}
		if i > 3000 {
			t.Fatalf("the command never started:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Shutdown()
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; !strings.Contains(stderr.String(), "recording the outcome failed"); i++ {
		if i > 3000 {
			t.Fatalf("bl run did not try the outcome again:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		exited <- nil // for the deferred wait
		if code := cmd.ProcessState.ExitCode(); code != 7 {
			t.Errorf("bl run ended by SIGTERM with the outcome unrecorded: exit %d, want 7:\n%s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Errorf("bl run still runs 60s after SIGTERM, trying again to record an outcome:\n%s", stderr.String())
	}
}

// TestDaemonTooLargeRequestGoesToBLGit: a command line whose environment
// makes a request past what bl daemon reads (control characters grow
// sixfold in JSON) is refused, so bl-git runs it, rather than left
// unanswered, which the caller would report as a call that may have run.
func TestDaemonTooLargeRequestGoesToBLGit(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "L1", "--title", "large"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	startDaemon(t, bl, filepath.Dir(r.dir), blEnv("BL_ARBITER="+srv.URL()))
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL()}}
	for i := range 7 {
		env.env = append(env.env, fmt.Sprintf("BIG%d=%s", i, strings.Repeat("\x01", 100<<10)))
	}
	if c := r.run("w", env, "claim", "--owner", "w", "--id", "L1", "--json"); c.Exit != 0 {
		t.Errorf("a claim with a large environment: exit %d %s", c.Exit, c.Stderr)
	}
}

// TestArbiterPendingNoteNotThroughLink: the note a claim through the
// arbiter keeps while its write may have landed unanswered
// (cache/arbiter/<hash of the request id>) is not written through a link
// the clone's files put there (a tracked symlink, for a request id one can
// guess): the file the link names is left as it was.
func TestArbiterPendingNoteNotThroughLink(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "P1", "--title", "pending"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	victim := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(victim, []byte("export PATH=$HOME/bin:$PATH\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("k1"))
	note := filepath.Join(r.dir, "cache", "arbiter", hex.EncodeToString(sum[:16]))
	if err := os.MkdirAll(filepath.Dir(note), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, note); err != nil {
		t.Fatal(err)
	}
	env := runOpts{env: []string{"BL_ARBITER=" + srv.URL()}}
	c := r.run("w", env, "claim", "--owner", "w", "--id", "P1", "--json", "--request-id", "k1")
	if c.Exit != 0 {
		t.Errorf("the claim: exit %d %s", c.Exit, c.Stderr)
	}
	if data, _ := os.ReadFile(victim); string(data) != "export PATH=$HOME/bin:$PATH\n" {
		t.Errorf("the file a link in cache/arbiter names was rewritten: %q", data)
	}
}
