package proof

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestArbiterVersusGit measures one workload through the git remote
// (claims.remote, a bare repository on this disk) and through the claim
// arbiter (an embedded NATS JetStream server on 127.0.0.1): N clones × 4
// processes, each claiming and completing until no card is left, 2 cards
// per process. It reports claims per second (acknowledged claims over the
// wall time of the run), the p50 and p90 of a claim call's latency, and
// the CPU per claim (every bl, bl-git and git process the run started,
// and for the arbiter the test process that embeds the server, over the
// claims). BL_ARBITER_BENCH=1 runs it; BL_ARBITER_BENCH_OUT names a file
// for the markdown table (docs/PERFORMANCE.md takes it as it is).
//
//	BL_ARBITER_BENCH=1 BL_ARBITER_BENCH_OUT=/tmp/arbiter.md go test -count=1 -run TestArbiterVersusGit -v -timeout 60m ./proof/
func TestArbiterVersusGit(t *testing.T) {
	if os.Getenv("BL_ARBITER_BENCH") == "" {
		t.Skip("a measurement: BL_ARBITER_BENCH=1")
	}
	const procs, perProc = 4, 2
	var rows []string
	sizes := []int{2, 4, 8}
	if only, err := strconv.Atoi(os.Getenv("BL_ARBITER_BENCH_CLONES")); err == nil {
		sizes = []int{only} // one size, to look at it
	}
	for _, clones := range sizes {
		for _, via := range []string{"git remote", "arbiter", "arbiter, bl daemon"} {
			var m *benchResult
			switch via {
			case "arbiter":
				m = benchArbiter(t, clones, procs, clones*procs*perProc, false)
			case "arbiter, bl daemon":
				m = benchArbiter(t, clones, procs, clones*procs*perProc, true)
			default:
				m = benchGit(t, clones, procs, clones*procs*perProc)
			}
			row := fmt.Sprintf("| %d × %d | %s | %d | %.1f | %s | %s | %s |", clones, procs, via, m.claims, m.rate(),
				ms(m.pct(50)), ms(m.pct(90)), ms(m.cpuPerClaim()))
			t.Log(row)
			rows = append(rows, row)
		}
	}
	table := "| clones × processes | through | claims | claims/s | p50 claim | p90 claim | CPU per claim |\n|---|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	t.Logf("\n%s", table)
	if out := os.Getenv("BL_ARBITER_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

type benchResult struct {
	mu      sync.Mutex
	claims  int
	lat     []time.Duration
	cpu     time.Duration
	elapsed time.Duration
}

func (m *benchResult) rate() float64 { return float64(m.claims) / m.elapsed.Seconds() }

func (m *benchResult) pct(p int) time.Duration {
	if len(m.lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), m.lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func (m *benchResult) cpuPerClaim() time.Duration {
	if m.claims == 0 {
		return 0
	}
	return m.cpu / time.Duration(m.claims)
}

// benchCall runs one bl process and returns its call and its CPU (with
// the processes it waited for: bl-git's git subprocesses).
func benchCall(bin, dir string, env []string, args ...string) (Call, time.Duration) {
	c := Call{Args: args}
	describe(&c)
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	c.Start = time.Now()
	err := cmd.Run()
	c.End = time.Now()
	c.Stdout, c.Stderr = stdout.Bytes(), stderr.Bytes()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		c.Exit = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	} else if err != nil {
		c.Exit = 127
	}
	return c, cpu
}

// benchWorkers runs clones × procs workers, each claiming and completing
// until nothing is claimable, and records every claim that was acknowledged.
func benchWorkers(t *testing.T, m *benchResult, dirs []string, procs int, bin string, env []string, extra ...string) {
	var wg sync.WaitGroup
	start := time.Now()
	for ci, dir := range dirs {
		for p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("c%dp%d", ci, p)
				for n := 0; ; n++ {
					args := append([]string{"claim", "--owner", owner, "--ttl", "1h", "--json", "--request-id", fmt.Sprintf("%s-%d", owner, n)}, extra...)
					var c Call
					var cpu time.Duration
					for try := 0; try < 20; try++ {
						c, cpu = benchCall(bin, dir, env, args...)
						m.mu.Lock()
						m.cpu += cpu
						m.mu.Unlock()
						if c.Exit == 0 {
							break
						}
					}
					if c.Exit != 0 {
						t.Errorf("%s: claim: exit %d: %s", owner, c.Exit, bytes.TrimSpace(c.Stderr))
						return
					}
					out, err := parseOut(c.Stdout)
					if err != nil || out == nil {
						return
					}
					m.mu.Lock()
					m.claims++
					m.lat = append(m.lat, c.End.Sub(c.Start))
					m.mu.Unlock()
					args = append([]string{"complete", "--id", out.ID, "--owner", owner, "--epoch", strconv.FormatInt(out.ClaimEpoch, 10), "--json", "--request-id", fmt.Sprintf("%s-%d-done", owner, n)}, extra...)
					for try := 0; try < 20; try++ {
						c, cpu = benchCall(bin, dir, env, args...)
						m.mu.Lock()
						m.cpu += cpu
						m.mu.Unlock()
						if c.Exit == 0 {
							break
						}
					}
					if c.Exit != 0 {
						t.Errorf("%s: complete: exit %d: %s", owner, c.Exit, bytes.TrimSpace(c.Stderr))
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	m.elapsed = time.Since(start)
}

func benchGit(t *testing.T, clones, procs, cards int) *benchResult {
	w := newWorld(t, fmt.Sprintf("bench%d", clones))
	seed := w.seed("seed", blSync, func(cfg map[string]any) {
		cfg["claims"] = map[string]any{"remote": "origin"}
	})
	for i := range cards {
		seed.do("create", "--id", fmt.Sprintf("B%03d", i), "--title", "measured", "--priority", strconv.Itoa(i%3))
	}
	seed.publishSeed()
	var dirs []string
	for i := range clones {
		dirs = append(dirs, w.clone(fmt.Sprintf("b%d", i), blSync).dir)
	}
	m := &benchResult{}
	benchWorkers(t, m, dirs, procs, w.bl, w.env)
	return m
}

// benchArbiter measures claims through the arbiter; with daemon, each
// clone runs a bl daemon that its processes' calls go through (its CPU is
// counted).
func benchArbiter(t *testing.T, clones, procs, cards int, daemon bool) *benchResult {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	seed := newBacklog(t, bl)
	for i := range cards {
		if c := seed.run("seed", runOpts{}, "create", "--id", fmt.Sprintf("B%03d", i), "--title", "measured", "--priority", strconv.Itoa(i%3)); c.Exit != 0 {
			t.Fatalf("create: %s", c.Stderr)
		}
	}
	var dirs []string
	for range clones {
		top := t.TempDir()
		if err := os.CopyFS(filepath.Join(top, ".backlog"), os.DirFS(seed.dir)); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, top)
	}
	m := &benchResult{}
	env := blEnv("BL_ARBITER=" + srv.URL())
	var daemons []*exec.Cmd
	if daemon {
		for _, dir := range dirs {
			daemons = append(daemons, startDaemon(t, bl, dir, env))
		}
	}
	before := selfCPU()
	benchWorkers(t, m, dirs, procs, bl, env)
	m.cpu += selfCPU() - before // the embedded server's share
	for _, d := range daemons {
		_ = d.Process.Signal(syscall.SIGTERM)
		_ = d.Wait()
		if ru, ok := d.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return m
}

// startDaemon starts bl daemon in the clone at dir and waits until it
// serves; it is killed when the test ends.
func startDaemon(t testing.TB, bl, dir string, env []string) *exec.Cmd {
	t.Helper()
	cmd, err := tryStartDaemon(bl, dir, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func tryStartDaemon(bl, dir string, env []string) (*exec.Cmd, error) {
	cmd := exec.Command(bl, "daemon")
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(line, "serving") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("bl daemon: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return cmd, nil
}

// selfCPU is this process's CPU so far (the embedded NATS server runs in
// it).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
