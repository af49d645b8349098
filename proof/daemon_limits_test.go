package proof

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestDaemonLimits: bl daemon started where no arbiter is set warns; two
// started at once in one clone leave one serving and the other refused
// (exit 4); a request past the size limit is refused with an answer, not
// read on, and the daemon goes on serving.
func TestDaemonLimits(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "L1", "--title", "limits"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	clone := filepath.Dir(r.dir)

	// No arbiter here: it serves, and says that nothing comes to it
	// but the calls of a bl that sets one.
	d := exec.Command(bl, "daemon")
	d.Dir, d.Env = clone, blEnv()
	stderr, err := d.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stderr)
	first, _ := rd.ReadString('\n')
	// It warns before it serves its first call: what it printed by its
	// end (SIGTERM) holds the warning.
	_ = d.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(rd)
	_ = d.Wait()
	if !strings.Contains(first, "serving") || !strings.Contains(string(rest), "no claim arbiter is set here (--arbiter, BL_ARBITER, .backlog/arbiter.json)") {
		t.Errorf("bl daemon with no arbiter set said:\n%s%s", first, rest)
	}

	// Two at once, a few times over: exactly one serves.
	env := blEnv("BL_ARBITER=" + srv.URL())
	for round := range 5 {
		var wg sync.WaitGroup
		cmds := make([]*exec.Cmd, 3)
		outs := make([]string, 3)
		for i := range cmds {
			cmds[i] = exec.Command(bl, "daemon")
			cmds[i].Dir, cmds[i].Env = clone, env
			p, err := cmds[i].StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				line, _ := bufio.NewReader(p).ReadString('\n')
				outs[i] = line
				go func() { _, _ = io.Copy(io.Discard, p) }()
			}()
		}
		wg.Wait()
		serving := 0
		for i, c := range cmds {
			if strings.Contains(outs[i], "serving") {
				serving++
				continue
			}
			err := c.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 || !(strings.Contains(outs[i], "already serves") || strings.Contains(outs[i], "is starting in this clone")) {
				t.Errorf("round %d: a second daemon: %v %q", round, err, outs[i])
			}
		}
		if serving != 1 {
			t.Errorf("round %d: %d daemons serve one clone", round, serving)
		}
		for i, c := range cmds {
			if strings.Contains(outs[i], "serving") {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}
	}

	// A request larger than the limit, with no end of line.
	startDaemon(t, bl, clone, env)
	conn, err := net.Dial("unix", filepath.Join(r.dir, "cache", "daemon", "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 8 {
			if _, err := conn.Write(chunk); err != nil {
				return // the daemon read no further and closed
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	reply, _ := io.ReadAll(conn)
	if !strings.Contains(string(reply), `"refused":"a request is at most 4194304 bytes"`) {
		t.Errorf("an oversized request got %q", reply)
	}
	c := r.run("w", runOpts{env: []string{"BL_ARBITER=" + srv.URL(), "BL_GIT=/nonexistent/bl-git"}}, "claim", "--owner", "w", "--id", "L1", "--json")
	if c.Exit != 0 {
		t.Errorf("the daemon after an oversized request: exit %d %s", c.Exit, c.Stderr)
	}
}
