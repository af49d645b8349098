package mcpserver_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// The official MCP TypeScript client (@modelcontextprotocol/sdk, the
// version pinned in testdata/tsclient/package.json and its lock file),
// what most agent runtimes are built on, runs as a real node process in
// front of a real bl mcp. Tests install nothing: node and npm come from the
// system, and scripts/test-tools installs the SDK (npm ci) into the user's
// cache directory, under a name made of a hash of the pinned files;
// .ci/run runs it. Without them the tests are skipped, saying so.

// tsClientDir returns a directory holding client.mjs and its node_modules.
func tsClientDir(t *testing.T) string {
	t.Helper()
	return npmDir(t, "tsclient", "@modelcontextprotocol/sdk", "package.json", "package-lock.json", "client.mjs")
}

// npmDir returns where scripts/test-tools installed testdata/name (its
// package.json and lock file, and the other files named): the user's cache
// directory, bl-test/mcp-<name>-<the first 16 hex digits of the SHA-256 of
// those files, in order>; pkg is the package that shows the install is
// complete. It skips the test when that is not there.
func npmDir(t *testing.T, name, pkg string, files ...string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the TypeScript client tests are skipped (.ci/run installs node and npm)")
	}
	src := filepath.Join("testdata", name)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "bl-test", "mcp-"+name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
		t.Skipf("%s is not installed for these tests (scripts/test-tools %s installs it in %s; .ci/run runs it)", pkg, name, dir)
	}
	return dir
}

// tsClient is one TypeScript client process with its bl mcp.
type tsClient struct {
	t       *testing.T
	stdin   io.WriteCloser
	mu      sync.Mutex
	seq     int
	waiting map[int]chan tsReply
}

type tsReply struct {
	Seq       int             `json:"seq"`
	Value     json.RawMessage `json:"value"`
	Error     string          `json:"error"`
	ErrorCode any             `json:"errorCode"`
	Ready     bool            `json:"ready"`
	Fatal     string          `json:"fatal"`
}

// startTS starts a TypeScript client on bl mcp over backlog.
func startTS(t *testing.T, clientDir, backlog string, extra ...string) *tsClient {
	t.Helper()
	exe, _ := os.Executable()
	dir := t.TempDir()
	blGit := filepath.Join(dir, "bl-git")
	os.WriteFile(blGit, []byte("#!/bin/sh\nBL_TEST_MAIN=bl-git exec '"+exe+"' \"$@\"\n"), 0o755)
	cmd := exec.Command("node", append([]string{filepath.Join(clientDir, "client.mjs"), exe, "mcp"}, extra...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BL_TEST_MAIN=bl", "BL_GIT="+blGit, "BL_DIR="+backlog, "BL_ACTOR=ts-agent")
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &tsClient{t: t, stdin: stdin, waiting: map[int]chan tsReply{}}
	ready := make(chan tsReply, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var r tsReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("client printed %q", sc.Text())
				continue
			}
			if r.Ready || r.Fatal != "" {
				ready <- r
				continue
			}
			c.mu.Lock()
			ch := c.waiting[r.Seq]
			delete(c.waiting, r.Seq)
			c.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		timer := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		timer.Stop()
	})
	select {
	case r := <-ready:
		if r.Fatal != "" {
			t.Fatalf("the TypeScript client did not connect: %s", r.Fatal)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the TypeScript client did not connect in 60s")
	}
	return c
}

// do sends one request to the client and waits for its reply.
func (c *tsClient) do(req map[string]any) tsReply {
	c.t.Helper()
	c.mu.Lock()
	c.seq++
	req["seq"] = c.seq
	ch := make(chan tsReply, 1)
	c.waiting[c.seq] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(req)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	select {
	case r := <-ch:
		return r
	case <-time.After(90 * time.Second):
		c.t.Fatalf("no reply from the TypeScript client to %s", b)
	}
	return tsReply{}
}

// toolResult is a CallToolResult as the TypeScript client returned it.
type toolResult struct {
	Result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	} `json:"result"`
	Progress int `json:"progress"`
}

// call calls a tool through the TypeScript client: it must succeed (the
// client accepted the result) and be a tool error when wantError says so.
// It returns the result's JSON text, decoded.
func (c *tsClient) call(tool string, args map[string]any, wantError bool) any {
	c.t.Helper()
	r := c.do(map[string]any{"op": "call", "tool": tool, "args": args})
	if r.Error != "" {
		c.t.Fatalf("TypeScript client: %s(%v): %s", tool, args, r.Error)
	}
	var res toolResult
	if err := json.Unmarshal(r.Value, &res); err != nil {
		c.t.Fatal(err)
	}
	if res.Result.IsError != wantError || len(res.Result.Content) != 1 || res.Result.Content[0].Type != "text" {
		c.t.Fatalf("%s(%v): %s", tool, args, r.Value)
	}
	var v any
	if err := json.Unmarshal([]byte(res.Result.Content[0].Text), &v); err != nil {
		c.t.Fatalf("%s: text is not JSON: %s", tool, res.Result.Content[0].Text)
	}
	if v != nil {
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(res.Result.StructuredContent)
		if string(a) != string(b) {
			c.t.Fatalf("%s: structured content differs from the text:\n%s\n%s", tool, a, b)
		}
	}
	return v
}

func newBacklog(t *testing.T) string {
	t.Helper()
	backlog := filepath.Join(t.TempDir(), ".backlog")
	if _, err := ledger.Init(backlog); err != nil {
		t.Fatal(err)
	}
	return backlog
}

// TestTypeScriptClient runs every tool, the prompt, the resource, the
// error shapes, progress and cancellation through the official client.
func TestTypeScriptClient(t *testing.T) {
	clientDir := tsClientDir(t)
	backlog := newBacklog(t)
	c := startTS(t, clientDir, backlog)

	var tools struct {
		Tools []struct {
			Name         string         `json:"name"`
			Description  string         `json:"description"`
			InputSchema  map[string]any `json:"inputSchema"`
			OutputSchema map[string]any `json:"outputSchema"`
			Annotations  map[string]any `json:"annotations"`
		} `json:"tools"`
	}
	r := c.do(map[string]any{"op": "tools"})
	if r.Error != "" || json.Unmarshal(r.Value, &tools) != nil || len(tools.Tools) != 22 {
		t.Fatalf("tools/list: %s %s", r.Error, r.Value)
	}
	for _, tl := range tools.Tools {
		if tl.Description == "" || tl.InputSchema["type"] != "object" || tl.Annotations == nil {
			t.Errorf("tool %s: description, input schema or annotations missing", tl.Name)
		}
		// Every tool but claim (whose "nothing claimable" is null, which
		// structured content cannot be) declares its output, so the
		// client checks every answer below against it.
		if (tl.OutputSchema == nil) != (tl.Name == "claim") {
			t.Errorf("tool %s: output schema %v", tl.Name, tl.OutputSchema)
		}
	}
	for _, op := range []map[string]any{{"op": "prompts"}, {"op": "prompt", "name": "bl-protocol"}, {"op": "resources"},
		{"op": "resource", "uri": "bl://protocol"}, {"op": "instructions"}} {
		if r := c.do(op); r.Error != "" || !json.Valid(r.Value) || !strings.Contains(string(r.Value), "fenced") && op["op"] != "prompts" && op["op"] != "resources" {
			t.Errorf("%v: %s %s", op, r.Error, r.Value)
		}
	}

	// Every tool, through the client's validation.
	if v := c.call("claim", map[string]any{"owner": "ts1"}, false); v != nil {
		t.Fatalf("claim on an empty backlog = %v", v)
	}
	c.call("create", map[string]any{"title": "Parser", "id": "A", "priority": 3, "label": []string{"api"}}, false)
	c.call("create", map[string]any{"title": "Printer", "id": "B"}, false)
	c.call("create", map[string]any{"title": "Docs", "id": "C"}, false)
	if v := c.call("ready", map[string]any{}, false); len(field(v, "cards").([]any)) != 3 {
		t.Fatalf("ready = %v", v)
	}
	if v := c.call("list", map[string]any{"status": []string{"ready"}, "limit": 2}, false); len(field(v, "cards").([]any)) != 2 || field(v, "more") != true {
		t.Fatalf("list = %v", v)
	}
	c.call("update", map[string]any{"id": "B", "body": "print it"}, false)
	c.call("link", map[string]any{"from": "B", "to": "A"}, false)
	v := c.call("claim", map[string]any{"owner": "ts1", "ttl": "10m"}, false)
	if field(v, "id") != "A" || field(v, "claim_epoch") != 1.0 {
		t.Fatalf("claim = %v", v)
	}
	c.call("heartbeat", map[string]any{"id": "A", "owner": "ts1", "epoch": 1, "progress": 50}, false)
	c.call("note", map[string]any{"id": "A", "owner": "ts1", "epoch": 1, "text": "lexer done"}, false)
	c.call("fail", map[string]any{"id": "A", "owner": "ts1", "epoch": 1, "reason": "flaky"}, false)
	c.call("claim", map[string]any{"owner": "ts1", "id": "C"}, false)
	c.call("release", map[string]any{"id": "C", "owner": "ts1", "epoch": 1}, false)
	c.call("claim", map[string]any{"owner": "ts1", "id": "C"}, false)
	c.call("complete", map[string]any{"id": "C", "owner": "ts1", "epoch": 2, "note": "merged"}, false)
	c.call("block", map[string]any{"id": "B", "reason": "waits on a decision"}, false)
	if v := c.call("show", map[string]any{"id": "A"}, false); len(field(v, "notes").([]any)) != 1 {
		t.Fatalf("show = %v", v)
	}
	if v := c.call("log", map[string]any{"id": "C"}, false); len(field(v, "events").([]any)) != 5 {
		t.Fatalf("log = %v", v)
	}
	if v := c.call("stats", map[string]any{}, false); field(v, "cards") != 3.0 {
		t.Fatalf("stats = %v", v)
	}
	// search, handoff and the review gate.
	if v := c.call("search", map[string]any{"text": "pars"}, false); len(field(v, "cards").([]any)) != 1 {
		t.Fatalf("search = %v", v)
	}
	// The planning tools: assign, the list filters, unblock and reopen.
	if v := c.call("assign", map[string]any{"id": "A", "assignee": "bob"}, false); field(v, "assignee") != "bob" {
		t.Fatalf("assign = %v", v)
	}
	if v := c.call("list", map[string]any{"assignee": "bob", "state": []string{"ready", "waiting"}}, false); len(field(v, "cards").([]any)) != 1 {
		t.Fatalf("list assignee, state = %v", v)
	}
	c.call("assign", map[string]any{"id": "A", "clear": true}, false)
	if v := c.call("unblock", map[string]any{"id": "B"}, false); field(v, "status") != "ready" {
		t.Fatalf("unblock = %v", v)
	}
	if v := c.call("reopen", map[string]any{"id": "C"}, false); field(v, "status") != "ready" {
		t.Fatalf("reopen = %v", v)
	}
	c.call("block", map[string]any{"id": "B", "reason": "waits on a decision"}, false)
	c.call("claim", map[string]any{"owner": "ts1", "id": "C"}, false)
	c.call("complete", map[string]any{"id": "C", "owner": "ts1", "epoch": 3}, false)
	c.call("create", map[string]any{"title": "Review me", "id": "D"}, false)
	c.call("claim", map[string]any{"owner": "ts1", "id": "D"}, false)
	if v := c.call("handoff", map[string]any{"id": "D", "owner": "ts1", "epoch": 1, "to": "ts2"}, false); field(v, "claim_owner") != "ts2" {
		t.Fatalf("handoff = %v", v)
	}
	c.call("complete", map[string]any{"id": "D", "owner": "ts2", "epoch": 2, "review": true}, false)
	// The worker's server may not decide its own review; a reviewer
	// with a server (and actor) of its own does.
	if v := c.call("approve", map[string]any{"id": "D", "owner": "rev", "epoch": 2}, true); field(v, "code") != "self_review" {
		t.Fatalf("self-approval = %v", v)
	}
	rc := startTS(t, clientDir, backlog, "--actor", "ts-reviewer")
	rc.call("claim", map[string]any{"owner": "rev", "review": true}, false)
	rc.call("reject", map[string]any{"id": "D", "owner": "rev", "epoch": 3, "reason": "needs a test"}, false)
	c.call("claim", map[string]any{"owner": "ts2", "id": "D"}, false)
	c.call("complete", map[string]any{"id": "D", "owner": "ts2", "epoch": 4, "review": true}, false)
	rc.call("claim", map[string]any{"owner": "rev", "review": true}, false)
	if v := rc.call("approve", map[string]any{"id": "D", "owner": "rev", "epoch": 5}, false); field(v, "status") != "done" {
		t.Fatalf("approve = %v", v)
	}

	// Every kind of error: one shape, accepted by the client.
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"create", map[string]any{}, "usage"},
		{"create", map[string]any{"title": "t", "priority": "high"}, "usage"},
		{"create", map[string]any{"title": "t", "unknown": true}, "usage"},
		{"create", map[string]any{"title": "t", "body": "-"}, "usage"},
		{"show", map[string]any{}, "usage"},
		{"show", map[string]any{"id": "NOPE"}, "not_found"},
		{"heartbeat", map[string]any{"id": "C", "owner": "ts1"}, "usage"},
		{"heartbeat", map[string]any{"id": "C", "owner": "ts1", "epoch": 2}, "fenced"},
		{"claim", map[string]any{"owner": "ts1", "id": "B"}, "conflict"},
		{"note", map[string]any{"id": "A", "text": "x", "owner": "ts1"}, "usage"},
		{"ready", map[string]any{"limit": 5000}, "usage"},
	} {
		e := c.call(tc.tool, tc.args, true)
		if obj, _ := e.(map[string]any); len(obj) != 4 || obj["code"] != tc.code || obj["hint"] == "" {
			t.Errorf("%s %v = %v, want code %s in the one shape", tc.tool, tc.args, e, tc.code)
		}
	}

	// Progress while a claim waits, and the wait's end.
	r = c.do(map[string]any{"op": "call", "tool": "claim", "args": map[string]any{"owner": "ts1", "wait": "2500ms"}, "progress": true})
	var res toolResult
	if r.Error != "" || json.Unmarshal(r.Value, &res) != nil || res.Progress < 1 || res.Result.Content[0].Text != "null" {
		t.Fatalf("waiting claim: %s %s", r.Error, r.Value)
	}
	// Cancellation: the client aborts the call; nothing is claimed after.
	r = c.do(map[string]any{"op": "call", "tool": "claim", "args": map[string]any{"owner": "ts1", "wait": "60s"}, "cancelAfterMs": 300})
	if r.Error == "" {
		t.Fatalf("a cancelled claim returned %s", r.Value)
	}
	time.Sleep(300 * time.Millisecond)
	c.call("create", map[string]any{"title": "after the cancel", "id": "Z"}, false)
	time.Sleep(500 * time.Millisecond)
	assertUnclaimed(t, backlog, "Z")
}

// TestTypeScriptClientsShareOneBacklog: 4 TypeScript clients, each with
// its own bl mcp, claim and complete every card of one backlog: no card
// is claimed twice, none is left.
func TestTypeScriptClientsShareOneBacklog(t *testing.T) {
	clientDir := tsClientDir(t)
	backlog := newBacklog(t)
	const cards = 40
	b, err := ledger.Open(backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cards {
		if _, _, err := b.Create(t.Context(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "test"}, ID: fmt.Sprintf("K%02d", i), Title: "card"}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	var mu sync.Mutex
	claimed := map[string]string{}
	var wg sync.WaitGroup
	// All four connect first, then claim together.
	clients := make([]*tsClient, 4)
	for w := range clients {
		clients[w] = startTS(t, clientDir, backlog, "--owner", fmt.Sprintf("ts%d", w))
	}
	for w, c := range clients {
		owner := fmt.Sprintf("ts%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				v := c.call("claim", map[string]any{"ttl": "5m"}, false)
				if v == nil {
					return
				}
				id := field(v, "id").(string)
				mu.Lock()
				if prev, ok := claimed[id]; ok {
					t.Errorf("card %s claimed by %s and by %s", id, prev, owner)
				}
				claimed[id] = owner
				mu.Unlock()
				c.call("complete", map[string]any{"id": id, "epoch": field(v, "claim_epoch")}, false)
			}
		}()
	}
	wg.Wait()
	if len(claimed) != cards {
		t.Fatalf("%d cards claimed, want %d", len(claimed), cards)
	}
	b, err = ledger.Open(backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	all, _ := b.List(ledger.Filter{}, "")
	owners := map[string]bool{}
	for _, c := range all {
		if c.Status != ledger.StatusDone || c.Version != 3 {
			t.Errorf("card %s: %s after %d events, want done after create, claim, complete", c.ID, c.Status, c.Version)
		}
		owners[claimed[c.ID]] = true
	}
	if len(owners) < 2 {
		t.Errorf("every card went to one client (%v): the clients did not claim concurrently", owners)
	}
	t.Logf("%d cards over %d clients", cards, len(owners))
}

// TestInspectorCLI runs the MCP Inspector's CLI mode (pinned in
// testdata/inspector) against bl mcp: list the tools, call a list tool
// and a failing tool. Its install is larger (about 240 packages), so it
// runs when BL_TEST_INSPECTOR=1 (CI sets it).
func TestInspectorCLI(t *testing.T) {
	if os.Getenv("BL_TEST_INSPECTOR") != "1" {
		t.Skip("set BL_TEST_INSPECTOR=1 to run the MCP Inspector CLI against bl mcp")
	}
	dir := npmDir(t, "inspector", "@modelcontextprotocol/inspector", "package.json", "package-lock.json")
	backlog := newBacklog(t)
	exe, _ := os.Executable()
	tmp := t.TempDir()
	blGit := filepath.Join(tmp, "bl-git")
	os.WriteFile(blGit, []byte("#!/bin/sh\nBL_TEST_MAIN=bl-git exec '"+exe+"' \"$@\"\n"), 0o755)
	inspect := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "mcp-inspector"), append([]string{"--cli", exe, "mcp"}, args...)...)
		cmd.Env = append(os.Environ(), "BL_TEST_MAIN=bl", "BL_GIT="+blGit, "BL_DIR="+backlog, "BL_ACTOR=inspector")
		timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
		defer timer.Stop()
		out, err := cmd.Output()
		var v map[string]any
		if err != nil || json.Unmarshal(out, &v) != nil {
			t.Fatalf("mcp-inspector %v: %v\n%s", args, err, out)
		}
		return v
	}
	cs, _ := connect(t)
	served, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := inspect("--method", "tools/list"); len(v["tools"].([]any)) != len(served.Tools) {
		t.Fatalf("tools/list gives %d tools, the server serves %d", len(v["tools"].([]any)), len(served.Tools))
	}
	inspect("--method", "tools/call", "--tool-name", "create", "--tool-arg", "title=seen by the inspector", "--tool-arg", "id=I")
	v := inspect("--method", "tools/call", "--tool-name", "ready")
	if sc := v["structuredContent"].(map[string]any); len(sc["cards"].([]any)) != 1 {
		t.Fatalf("ready = %v", v)
	}
	v = inspect("--method", "tools/call", "--tool-name", "show")
	if v["isError"] != true || v["structuredContent"].(map[string]any)["exit_code"] != 2.0 {
		t.Fatalf("show without an id = %v", v)
	}
}
