package proof

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter/natstest"
)

// TestArbiterMCP: bl mcp with an arbiter set claims and renews through it,
// over one connection it keeps: another clone cannot take the card the
// agent claimed, a heartbeat while the server is down is an error with
// code "arbiter" (the agent learns its lease cannot be renewed), and once
// the server is back the next heartbeat goes through.
func TestArbiterMCP(t *testing.T) {
	bl := blGitBinary(t)
	srv := natstest.Start(t, t.TempDir())
	r := newBacklog(t, bl)
	if c := r.run("seed", runOpts{}, "create", "--id", "M1", "--title", "by mcp"); c.Exit != 0 {
		t.Fatalf("create: %s", c.Stderr)
	}
	other := filepath.Join(t.TempDir(), ".backlog")
	if err := os.CopyFS(other, os.DirFS(r.dir)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bl, "mcp", "--owner", "agent-1", "--dir", r.dir)
	cmd.Env = blEnv("BL_ARBITER=" + srv.URL())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	id := 0
	call := func(method string, params any) map[string]any {
		t.Helper()
		id++
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := io.WriteString(stdin, string(req)+"\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
		t.Fatalf("bl mcp ended: %v", lines.Err())
		return nil
	}
	tool := func(name string, args map[string]any) (text string, isError bool) {
		t.Helper()
		m := call("tools/call", map[string]any{"name": name, "arguments": args})
		res, _ := m["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) != 1 {
			t.Fatalf("%s: %v", name, m)
		}
		isErr, _ := res["isError"].(bool)
		return fmt.Sprint(content[0].(map[string]any)["text"]), isErr
	}
	call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "proof", "version": "1"}})
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	if text, isErr := tool("claim", map[string]any{"id": "M1", "ttl": "1h"}); isErr || !strings.Contains(text, `"claim_epoch"`) {
		t.Fatalf("claim: %s", text)
	}
	// The claim is the arbiter's: a clone that never saw it is refused.
	o := (&runner{bin: bl, dir: other}).run("other", runOpts{env: []string{"BL_ARBITER=" + srv.URL()}}, "claim", "--owner", "w2", "--id", "M1", "--json")
	if o.Exit != 4 {
		t.Fatalf("another clone's claim of M1: exit %d %s", o.Exit, o.Stderr)
	}
	opts := *srv.Opts
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	srv.Shutdown()
	srv.WaitForShutdown()
	text, isErr := tool("heartbeat", map[string]any{"id": "M1", "epoch": 1})
	if !isErr || !strings.Contains(text, `"arbiter"`) {
		t.Fatalf("heartbeat with the arbiter down: error %v: %s", isErr, text)
	}
	natstest.StartWith(t, &opts) // the same port and store
	deadline := time.Now().Add(30 * time.Second)
	for {
		text, isErr = tool("heartbeat", map[string]any{"id": "M1", "epoch": 1})
		if !isErr || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if isErr {
		t.Fatalf("heartbeat after the server came back: %s", text)
	}
}
