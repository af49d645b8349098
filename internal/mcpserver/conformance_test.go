package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bl-backlog/bl/ledger"
)

// patience bounds a wait for what must happen: long enough for a loaded
// machine, so only a fault runs out of it.
const patience = 2 * time.Minute

// rawServer is bl mcp as a process spoken to line by line.
type rawServer struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	backlog string
}

// mcpCommand is bl mcp (the test binary as bl, handing over to itself as
// bl-git) on a new backlog.
func mcpCommand(t *testing.T, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	backlog := filepath.Join(dir, ".backlog")
	if _, err := ledger.Init(backlog); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	blGit := filepath.Join(dir, "bl-git")
	os.WriteFile(blGit, []byte("#!/bin/sh\nBL_TEST_MAIN=bl-git exec '"+exe+"' \"$@\"\n"), 0o755)
	cmd := exec.Command(exe, append([]string{"mcp"}, extra...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BL_TEST_MAIN=bl", "BL_GIT="+blGit, "BL_DIR="+backlog, "BL_ACTOR=agent-host")
	cmd.Stderr = os.Stderr
	return cmd, backlog
}

func startRaw(t *testing.T, extra ...string) *rawServer {
	t.Helper()
	cmd, backlog := mcpCommand(t, extra...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	r := &rawServer{cmd: cmd, stdin: stdin, lines: make(chan string, 100), backlog: backlog}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	r.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.recv(t)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawServer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (r *rawServer) recv(t *testing.T) map[string]any {
	t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			t.Fatal("bl mcp closed its output")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("reply is not JSON: %s", l)
		}
		return m
	case <-time.After(patience):
		t.Fatal("no reply")
	}
	return nil
}

// TestMCPMalformedLinesAreAnswered: a line that is not JSON, a batch and
// an id that is an object each get the JSON-RPC error the spec asks for,
// and the server goes on serving.
func TestMCPMalformedLinesAreAnswered(t *testing.T) {
	r := startRaw(t)
	for _, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{`{garbage`, -32700, nil},
		{`[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":8}`, -32600, 8.0},
		{`{"jsonrpc":"1.0","id":"v","method":"tools/list"}`, -32600, "v"},
		{`"just a string"`, -32600, nil},
	} {
		r.send(t, tc.line)
		m := r.recv(t)
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != tc.code || m["id"] != tc.id {
			t.Errorf("%s: reply %v, want error %v with id %v", tc.line, m, tc.code, tc.id)
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"create","arguments":{"title":"still here","id":"S"}}}`)
	m := r.recv(t)
	if m["id"] != 9.0 || m["result"].(map[string]any)["isError"] == true {
		t.Fatalf("after the malformed lines: %v", m)
	}
}

// TestMCPRefusesInvalidText: invalid UTF-8 and lone surrogates are refused
// as the command line refuses them (exit code 2), and nothing is written.
func TestMCPRefusesInvalidText(t *testing.T) {
	r := startRaw(t)
	for i, args := range []string{`{"title":"bad \ud800 half"}`, `{"title":"ok","body":"x \udc00"}`, "{\"title\":\"bad \xff byte\"}"} {
		r.send(t, `{"jsonrpc":"2.0","id":`+string(rune('1'+i))+`,"method":"tools/call","params":{"name":"create","arguments":`+args+`}}`)
		m := r.recv(t)
		res := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if res["isError"] != true || sc["exit_code"] != 2.0 || sc["code"] != "usage" {
			t.Errorf("%s: %v", args, m)
		}
	}
	b, err := ledger.Open(r.backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if cards, _ := b.List(ledger.Filter{}, ""); len(cards) != 0 {
		t.Fatalf("cards written: %v", cards)
	}
}

// TestMCPErrorShapes: every failure, the schema's included, is one object
// {error, code, exit_code, hint} with no command-line wording.
func TestMCPErrorShapes(t *testing.T) {
	cs, _ := connect(t)
	call(t, cs, "create", map[string]any{"title": "x", "id": "X"})
	call(t, cs, "claim", map[string]any{"owner": "me", "id": "X"})
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
		exit float64
	}{
		{"create", map[string]any{}, "usage", 2},
		{"create", map[string]any{"title": "t", "priority": "high"}, "usage", 2},
		{"create", map[string]any{"title": "t", "colour": "red"}, "usage", 2},
		{"create", map[string]any{"title": "t", "body": "-"}, "usage", 2},
		{"show", map[string]any{}, "usage", 2},
		{"show", map[string]any{"id": "NOPE"}, "not_found", 3},
		{"claim", map[string]any{}, "usage", 2},
		{"claim", map[string]any{"owner": "me", "ttl": "10ms"}, "usage", 2},
		{"heartbeat", map[string]any{"id": "X", "owner": "me"}, "usage", 2},
		{"complete", map[string]any{"id": "X", "owner": "me"}, "usage", 2},
		{"fail", map[string]any{"id": "X", "owner": "me", "epoch": 0}, "usage", 2},
		{"release", map[string]any{"id": "X", "owner": "me", "epoch": 7}, "fenced", 4},
		{"note", map[string]any{"id": "X", "text": "unfenced"}, "usage", 2},
		{"note", map[string]any{"id": "X", "text": "half", "owner": "me"}, "usage", 2},
		{"list", map[string]any{"status": []string{"open"}}, "usage", 2},
		{"ready", map[string]any{"limit": 0}, "usage", 2},
		{"link", map[string]any{"from": "X", "to": "X"}, "invalid", 2},
		{"stats", map[string]any{"x": 1}, "usage", 2},
	} {
		text, v := call(t, cs, tc.tool, tc.args, true)
		obj, _ := v.(map[string]any)
		if len(obj) != 4 || obj["code"] != tc.code || obj["exit_code"] != tc.exit || obj["error"] == "" || obj["hint"] == "" {
			t.Errorf("%s %v: %s, want code %s exit %v and the four fields", tc.tool, tc.args, text, tc.code, tc.exit)
		}
		if strings.Contains(text, "--") {
			t.Errorf("%s %v: command-line wording in %s", tc.tool, tc.args, text)
		}
	}
}

// TestMCPNoBacklog: without a backlog the error says so.
func TestMCPNoBacklog(t *testing.T) {
	cs, backlog := connect(t)
	if err := os.RemoveAll(backlog); err != nil {
		t.Fatal(err)
	}
	_, v := call(t, cs, "ready", map[string]any{}, true)
	if field(v, "code") != "no_backlog" || field(v, "exit_code") != 3.0 || !strings.Contains(field(v, "error").(string), "backlog") {
		t.Fatalf("ready without a backlog = %v", v)
	}
}

// TestMCPOwnerFlag: with --owner the owner argument may be left out.
func TestMCPOwnerFlag(t *testing.T) {
	r := startRaw(t, "--owner", "session-7")
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create","arguments":{"title":"t","id":"T"}}}`)
	r.recv(t)
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"claim","arguments":{}}}`)
	m := r.recv(t)
	sc, _ := m["result"].(map[string]any)["structuredContent"].(map[string]any)
	if sc["claim_owner"] != "session-7" {
		t.Fatalf("claim = %v", m)
	}
}

// TestMCPCancelledClaimClaimsNothing: a waiting claim ends when its request
// is cancelled (notifications/cancelled), and claims nothing after.
func TestMCPCancelledClaimClaimsNothing(t *testing.T) {
	cs, backlog := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "claim", Arguments: map[string]any{"owner": "w", "wait": "60s"}})
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled claim returned %v after %s", err, time.Since(start))
	}
	time.Sleep(300 * time.Millisecond) // the server has read the cancellation
	call(t, cs, "create", map[string]any{"title": "later", "id": "L"})
	time.Sleep(500 * time.Millisecond)
	assertUnclaimed(t, backlog, "L")
}

// TestMCPExitsWhenClientGoes: closing stdin ends a waiting claim, claims
// nothing, and the server exits.
func TestMCPExitsWhenClientGoes(t *testing.T) {
	r := startRaw(t)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claim","arguments":{"owner":"w","wait":"60s"}}}`)
	time.Sleep(300 * time.Millisecond)
	r.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("bl mcp still runs after its client went away")
	}
	b, err := ledger.Open(r.backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Create(context.Background(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "test"}, ID: "G", Title: "after"}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	time.Sleep(300 * time.Millisecond)
	assertUnclaimed(t, r.backlog, "G")
}

// TestMCPAnswersEveryRequestBeforeEOF: requests piped in one go, stdin
// closed at once, are all answered, each exactly once, and the server
// exits 0: the writes (each a locked append), a claim that would wait, a
// second request under an id still being answered (refused), and a last
// line cut off by the end of input (a parse error).
func TestMCPAnswersEveryRequestBeforeEOF(t *testing.T) {
	for _, tail := range []string{
		`{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"list","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"last","method":"tools/ca`,
	} {
		cmd, backlog := mcpCommand(t)
		var in strings.Builder
		in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		want := map[string]bool{"0": true}
		const writes = 12
		for i := 1; i <= writes; i++ {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create","arguments":{"title":"card %d","id":"C%d"}}}`+"\n", i, i, i)
			want[fmt.Sprint(i)] = true
		}
		in.WriteString(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"claim","arguments":{"owner":"w","wait":"60s","label":"none"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","id":"dup","method":"tools/list"}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","id":"show","method":"tools/call","params":{"name":"show","arguments":{"id":"C1"}}}` + "\n")
		in.WriteString(tail)
		want["dup"], want["show"] = true, true
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bl mcp: %v", err)
		}
		got := map[string]int{}
		var parseErrors int
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("reply is not JSON: %s", l)
			}
			if m["id"] == nil {
				if e, _ := m["error"].(map[string]any); e == nil || e["code"] != -32700.0 {
					t.Fatalf("reply without id: %s", l)
				}
				parseErrors++
				continue
			}
			got[fmt.Sprint(m["id"])]++
		}
		if strings.HasSuffix(tail, "}") {
			want["last"] = true
		} else if parseErrors != 1 {
			t.Errorf("a line cut off by the end of input: %d parse errors, want 1", parseErrors)
		}
		for id := range want {
			if n := got[id]; n != 1 && !(id == "dup" && n == 2) {
				t.Errorf("request %s answered %d times", id, n)
			}
		}
		if got["dup"] != 2 || len(got) != len(want) {
			t.Errorf("answers %v, want one for each of %v (two for dup)", got, want)
		}
		b, err := ledger.Open(backlog, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= writes; i++ {
			if _, err := b.Get(fmt.Sprintf("C%d", i)); err != nil {
				t.Errorf("card C%d: %v", i, err)
			}
		}
		b.Close()
	}
}

// TestMCPClaimProgress: a waiting claim sends progress notifications.
func TestMCPClaimProgress(t *testing.T) {
	r := startRaw(t)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claim","_meta":{"progressToken":"tok"},"arguments":{"owner":"w","wait":"2500ms"}}}`)
	progress := 0
	for {
		m := r.recv(t)
		if m["method"] == "notifications/progress" {
			if m["params"].(map[string]any)["progressToken"] != "tok" {
				t.Fatalf("progress = %v", m)
			}
			progress++
			continue
		}
		if m["id"] != 1.0 {
			t.Fatalf("unexpected %v", m)
		}
		break
	}
	if progress < 1 {
		t.Fatal("no progress while the claim waited")
	}
}

func assertUnclaimed(t *testing.T, backlog, id string) {
	t.Helper()
	b, err := ledger.Open(backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := b.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != ledger.StatusReady {
		t.Fatalf("card %s is %s by %q: a cancelled wait claimed it", id, c.Status, c.ClaimOwner)
	}
}

// TestMCPPipedWaitingClaimTakesClaimableCard: a claim with wait piped in
// before stdin ends claims a card that is claimable, wherever the end of
// input finds it (here behind read calls, so it starts after the end): the
// end stops a wait, not the claim itself.
func TestMCPPipedWaitingClaimTakesClaimableCard(t *testing.T) {
	for round := range 3 {
		cmd, backlog := mcpCommand(t)
		b, err := ledger.Open(backlog, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Create(t.Context(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "test"}, ID: "P", Title: "claimable"}); err != nil {
			t.Fatal(err)
		}
		b.Close()
		var in strings.Builder
		in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		for i := range round + 1 {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":"r%d","method":"tools/call","params":{"name":"stats","arguments":{}}}`+"\n", i)
		}
		in.WriteString(`{"jsonrpc":"2.0","id":"claim","method":"tools/call","params":{"name":"claim","arguments":{"owner":"w","wait":"60s"}}}` + "\n")
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bl mcp: %v", err)
		}
		var answer string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.Contains(l, `"id":"claim"`) {
				answer = l
			}
		}
		if !strings.Contains(answer, `"claim_owner":"w"`) {
			t.Fatalf("round %d: claim answered %s, want card P claimed by w", round, answer)
		}
	}
}
