package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/internal/cli/gitcli"
	"github.com/bl-backlog/bl/ledger"
)

// The test binary is bl or bl-git when BL_TEST_MAIN says so, so that the
// test can run bl mcp as a real process, handed over from bl to bl-git.
func TestMain(m *testing.M) {
	switch os.Getenv("BL_TEST_MAIN") {
	case "bl":
		os.Exit(cli.Main(cli.Extensions{}, os.Args[1:], os.Stdout, os.Stderr))
	case "bl-git":
		os.Exit(cli.Main(gitcli.Extensions(), os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv("GORACE") == "" {
		// The bl processes are this binary: under -race each would sleep
		// a second as it exits.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

// connect starts `bl mcp` on a fresh backlog (through the lean bl, which
// hands it to bl-git) and returns a client session on it.
func connect(t *testing.T) (*mcp.ClientSession, string) {
	t.Helper()
	dir := t.TempDir()
	backlog := filepath.Join(dir, ".backlog")
	if _, err := ledger.Init(backlog); err != nil {
		t.Fatal(err)
	}
	return connectAs(t, dir, "agent-host"), backlog
}

// connectAs starts another `bl mcp` on the backlog of dir, as actor.
func connectAs(t *testing.T, dir, actor string) *mcp.ClientSession {
	t.Helper()
	backlog := filepath.Join(dir, ".backlog")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	blGit := filepath.Join(dir, "bl-git")
	if err := os.WriteFile(blGit, []byte("#!/bin/sh\nBL_TEST_MAIN=bl-git exec '"+exe+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "mcp")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BL_TEST_MAIN=bl", "BL_GIT="+blGit, "BL_DIR="+backlog, "BL_ACTOR="+actor)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bl-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its text and structured content; it must
// be a tool error when wantError says so.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, wantError ...bool) (string, any) {
	t.Helper()
	isError := len(wantError) > 0 && wantError[0]
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError != isError {
		t.Fatalf("%s(%v): isError %v, want %v: %s", name, args, res.IsError, isError, text)
	}
	var fromText any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("%s: text is not JSON: %v\n%s", name, err, text)
	}
	if res.StructuredContent != nil {
		a, _ := json.Marshal(fromText)
		b, _ := json.Marshal(res.StructuredContent)
		if string(a) != string(b) {
			t.Fatalf("%s: structured content differs from the text:\n%s\n%s", name, a, b)
		}
	} else if text != "null" {
		t.Fatalf("%s: no structured content for %s", name, text)
	}
	return text, fromText
}

func field(v any, k string) any { return v.(map[string]any)[k] }

func TestMCPServesEveryTool(t *testing.T) {
	cs, backlog := connect(t)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s lacks a description or an input schema", tl.Name)
		}
	}
	want := []string{"approve", "assign", "block", "claim", "complete", "create", "fail", "handoff", "heartbeat", "link", "list", "log", "note", "ready", "reject", "release", "reopen", "search", "show", "stats", "unblock", "update"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	// Nothing to claim: null, as bl claim --json prints it.
	if text, _ := call(t, cs, "claim", map[string]any{"owner": "a1"}, false); text != "null" {
		t.Fatalf("claim on an empty backlog = %s", text)
	}
	_, c := call(t, cs, "create", map[string]any{"title": "Fix the parser", "id": "A", "priority": 2, "label": []string{"api"},
		"acceptance": []string{"parses a, b and c", "-n is a flag"}, "max_attempts": 2})
	if field(c, "id") != "A" || field(c, "priority") != 2.0 || len(field(c, "acceptance").([]any)) != 2 {
		t.Fatalf("create = %v", c)
	}
	call(t, cs, "create", map[string]any{"title": "Then the printer", "id": "B", "depends_on": []string{"A"}})
	_, r := call(t, cs, "ready", map[string]any{})
	if ids := field(r, "cards").([]any); len(ids) != 1 || field(ids[0], "id") != "A" || field(r, "more") != false {
		t.Fatalf("ready = %v", r)
	}
	_, l := call(t, cs, "list", map[string]any{"status": []string{"ready"}, "sort": "id", "limit": 1, "fields": []string{"id", "priority"}})
	if cards := field(l, "cards").([]any); len(cards) != 1 || len(cards[0].(map[string]any)) != 2 || field(l, "more") != true {
		t.Fatalf("list = %v", l)
	}
	_, c = call(t, cs, "claim", map[string]any{"owner": "a1", "ttl": "10m"})
	if field(c, "id") != "A" || field(c, "claim_epoch") != 1.0 || field(c, "claim_owner") != "a1" {
		t.Fatalf("claim = %v", c)
	}
	_, c = call(t, cs, "heartbeat", map[string]any{"id": "A", "owner": "a1", "epoch": 1, "progress": 40})
	if field(c, "progress") != 40.0 {
		t.Fatalf("heartbeat = %v", c)
	}
	_, c = call(t, cs, "note", map[string]any{"id": "A", "owner": "a1", "epoch": 1, "text": "--json is not a flag here; the lexer is done"})
	if n := field(c, "notes").([]any); len(n) != 1 || field(n[0], "text") != "--json is not a flag here; the lexer is done" || field(n[0], "author") != "a1" {
		t.Fatalf("note = %v", c)
	}
	_, c = call(t, cs, "fail", map[string]any{"id": "A", "owner": "a1", "epoch": 1, "reason": "tests fail"})
	if field(c, "status") != "ready" || field(c, "defer_until") == nil {
		t.Fatalf("fail = %v", c)
	}
	_, c = call(t, cs, "claim", map[string]any{"owner": "a2", "id": "B"}, true)
	if field(c, "code") != "conflict" || field(c, "exit_code") != 4.0 {
		t.Fatalf("claim of a waiting card = %v", c)
	}
	call(t, cs, "create", map[string]any{"title": "Docs", "id": "C"})
	call(t, cs, "claim", map[string]any{"owner": "a2", "id": "C"})
	_, c = call(t, cs, "release", map[string]any{"id": "C", "owner": "a2", "epoch": 1, "reason": "not mine"})
	if field(c, "status") != "ready" {
		t.Fatalf("release = %v", c)
	}
	call(t, cs, "claim", map[string]any{"owner": "a2", "id": "C"})
	_, c = call(t, cs, "complete", map[string]any{"id": "C", "owner": "a2", "epoch": 2, "note": "merged"})
	if field(c, "status") != "done" || field(c, "close_note") != "merged" {
		t.Fatalf("complete = %v", c)
	}
	_, c = call(t, cs, "show", map[string]any{"id": "A"})
	if field(c, "attempts") != 1.0 || len(field(c, "notes").([]any)) != 1 {
		t.Fatalf("show = %v", c)
	}
	_, c = call(t, cs, "update", map[string]any{"id": "B", "priority": 5, "phase": "later"})
	if field(c, "priority") != 5.0 || field(c, "phase") != "later" {
		t.Fatalf("update = %v", c)
	}
	call(t, cs, "create", map[string]any{"title": "Spec", "id": "D"})
	_, c = call(t, cs, "link", map[string]any{"from": "D", "to": "A"})
	if d := field(c, "depends_on").([]any); len(d) != 1 || d[0] != "A" {
		t.Fatalf("link = %v", c)
	}
	_, c = call(t, cs, "block", map[string]any{"id": "D", "reason": "needs a decision"})
	if field(c, "status") != "blocked" {
		t.Fatalf("block = %v", c)
	}
	_, lg := call(t, cs, "log", map[string]any{"id": "C", "limit": 2})
	if ev := field(lg, "events").([]any); len(ev) != 2 || field(ev[1], "op") != "complete" || field(lg, "more") != true {
		t.Fatalf("log = %v", lg)
	}
	_, st := call(t, cs, "stats", map[string]any{})
	if field(field(st, "by_status"), "done") != 1.0 || field(st, "cards") != 4.0 {
		t.Fatalf("stats = %v", st)
	}

	// Errors are tool errors with the CLI's code and hint.
	_, e := call(t, cs, "heartbeat", map[string]any{"id": "C", "owner": "a2", "epoch": 2}, true)
	if field(e, "code") != "fenced" || field(e, "exit_code") != 4.0 || !strings.Contains(field(e, "hint").(string), "lease is gone") {
		t.Fatalf("fenced heartbeat = %v", e)
	}
	_, e = call(t, cs, "show", map[string]any{"id": "NOPE"}, true)
	if field(e, "code") != "not_found" || field(e, "exit_code") != 3.0 {
		t.Fatalf("show of a missing card = %v", e)
	}
	_, e = call(t, cs, "create", map[string]any{"title": " "}, true)
	if field(e, "code") != "usage" || field(e, "exit_code") != 2.0 {
		t.Fatalf("create without a title = %v", e)
	}
	// A phase or a label holding a control character is refused, as on
	// the command line; nothing is written.
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"create", map[string]any{"title": "ctl", "label": []string{"ok", "a\x01b"}}},
		{"create", map[string]any{"title": "ctl", "phase": "p\x1b[31m"}},
		{"update", map[string]any{"id": "B", "phase": "p\x1b[31m"}},
		{"update", map[string]any{"id": "B", "label": []string{"a\nb"}}},
	} {
		_, e = call(t, cs, tc.tool, tc.args, true)
		if field(e, "code") != "invalid" || field(e, "exit_code") != 2.0 || !strings.Contains(field(e, "error").(string), "holds a control character") {
			t.Fatalf("%s %v = %v", tc.tool, tc.args, e)
		}
	}

	// The ledger holds what the tools did.
	b, err := ledger.Open(backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, _ := b.Get("A")
	cc, _ := b.Get("C")
	if a.Status != ledger.StatusReady || a.Attempts != 1 || len(a.Notes) != 1 || cc.Status != ledger.StatusDone || cc.CloseNote != "merged" {
		t.Fatalf("ledger: A %+v, C %+v", a, cc)
	}
	var ops []string
	if _, err := b.History(ledger.HistoryFilter{}, func(e *ledger.Event, _ *ledger.Conflict) error {
		ops = append(ops, string(e.Op)+":"+e.Card+":"+e.Actor)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantOps := []string{"create:A:agent-host", "create:B:agent-host", "claim:A:agent-host", "heartbeat:A:agent-host", "note:A:agent-host",
		"fail:A:agent-host", "create:C:agent-host", "claim:C:agent-host", "release:C:agent-host", "claim:C:agent-host", "complete:C:agent-host",
		"update:B:agent-host", "create:D:agent-host", "link:D:agent-host", "block:D:agent-host"}
	if !slices.Equal(ops, wantOps) {
		t.Fatalf("ledger events:\n%v\nwant\n%v", ops, wantOps)
	}
}

// TestMCPRunsHooks: a tool call that writes fires the backlog's hooks once
// its events are durable, as the same command line does.
func TestMCPRunsHooks(t *testing.T) {
	t.Setenv("BL_TRUST_HOOKS", "1") // hooks.json outside a git repository
	cs, backlog := connect(t)
	log := filepath.Join(t.TempDir(), "hooks.log")
	hooksJSON := `{"hooks": [{"name": "seen", "on": ["create", "claim"], "command": ["sh", "-c", "echo \"$BL_OP $BL_CARD\" >> '` + log + `'"]}]}`
	if err := os.WriteFile(filepath.Join(backlog, "hooks.json"), []byte(hooksJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "create", map[string]any{"title": "Hooked", "id": "H"})
	call(t, cs, "claim", map[string]any{"owner": "w1", "id": "H"})
	call(t, cs, "show", map[string]any{"id": "H"})
	got, err := os.ReadFile(log)
	if err != nil || string(got) != "create H\nclaim H\n" {
		t.Fatalf("hooks log = %q, %v; want the create and the claim, in order", got, err)
	}
}

// TestMCPReviewSearchHandoff: the tools for the review gate, search,
// typed links and handoff run their commands as the command line does.
func TestMCPReviewSearchHandoff(t *testing.T) {
	cs, backlog := connect(t)
	ws, rs := cs, connectAs(t, filepath.Dir(backlog), "reviewer-host")
	call(t, cs, "create", map[string]any{"title": "fix the login form", "id": "R1"})
	call(t, cs, "create", map[string]any{"title": "docs", "id": "R2"})
	call(t, cs, "create", map[string]any{"title": "old login", "id": "R3"})

	// search: a list object, the id and title matches first.
	_, out := call(t, cs, "search", map[string]any{"text": "login"})
	cards := field(out, "cards").([]any)
	if len(cards) != 2 || field(cards[0], "id") != "R1" && field(cards[0], "id") != "R3" {
		t.Fatalf("search login = %v", out)
	}

	// A typed link that does not hold: R2 stays claimable.
	call(t, cs, "link", map[string]any{"from": "R2", "to": "R1", "type": "related"})
	call(t, cs, "link", map[string]any{"from": "R3", "to": "R1", "type": "superseded"}, true)

	// Handoff: w1 passes R1 to w2, and is fenced afterwards.
	_, c := call(t, cs, "claim", map[string]any{"owner": "w1", "id": "R1"})
	epoch := field(c, "claim_epoch")
	_, h := call(t, cs, "handoff", map[string]any{"id": "R1", "owner": "w1", "epoch": epoch, "to": "w2"})
	if field(h, "claim_owner") != "w2" {
		t.Fatalf("handoff: %v", h)
	}
	_, e := call(t, cs, "heartbeat", map[string]any{"id": "R1", "owner": "w1", "epoch": epoch}, true)
	if field(e, "code") != "fenced" {
		t.Fatalf("heartbeat after handoff: %v", e)
	}

	// Review: w2 sends it to review; a reviewer (another agent, its own
	// server and actor) claims it, rejects, and after the fix approves.
	_, r := call(t, cs, "complete", map[string]any{"id": "R1", "owner": "w2", "epoch": field(h, "claim_epoch"), "review": true, "branch": "bl/R1"})
	if field(r, "status") != "review" || field(r, "branch") != "bl/R1" {
		t.Fatalf("complete with review: %v", r)
	}
	// The worker may not decide its own review, by its actor (this
	// server's) or by the owner it worked as, whatever else it names.
	for _, self := range []struct {
		cs   *mcp.ClientSession
		args map[string]any
	}{
		{cs, map[string]any{"id": "R1", "owner": "reviewer", "epoch": field(h, "claim_epoch")}},
		{rs, map[string]any{"id": "R1", "owner": "w2", "epoch": field(h, "claim_epoch")}},
	} {
		_, e := call(t, self.cs, "approve", self.args, true)
		if field(e, "code") != "self_review" || field(e, "exit_code") != float64(4) {
			t.Fatalf("approve %v: %v", self.args, e)
		}
	}
	_, e = call(t, cs, "reject", map[string]any{"id": "R1", "owner": "someone", "epoch": field(h, "claim_epoch"), "reason": "mine"}, true)
	if field(e, "code") != "self_review" {
		t.Fatalf("reject by the worker: %v", e)
	}
	cs = rs // the reviewer's calls
	_, rc := call(t, cs, "claim", map[string]any{"owner": "reviewer", "review": true})
	if field(rc, "id") != "R1" {
		t.Fatalf("review claim: %v", rc)
	}
	_, rej := call(t, cs, "reject", map[string]any{"id": "R1", "owner": "reviewer", "epoch": field(rc, "claim_epoch"), "reason": "needs a test"})
	if field(rej, "status") != "ready" || field(rej, "reject_reason") != "needs a test" {
		t.Fatalf("reject: %v", rej)
	}
	_, c2 := call(t, ws, "claim", map[string]any{"owner": "w2", "id": "R1"})
	call(t, ws, "complete", map[string]any{"id": "R1", "owner": "w2", "epoch": field(c2, "claim_epoch"), "review": true})
	_, rc2 := call(t, cs, "claim", map[string]any{"owner": "reviewer", "review": true})
	_, ok := call(t, cs, "approve", map[string]any{"id": "R1", "owner": "reviewer", "epoch": field(rc2, "claim_epoch")})
	if field(ok, "status") != "done" {
		t.Fatalf("approve: %v", ok)
	}
}

// TestMCPPlanning: assign, the list filters state and assignee, ready and
// claim passing over cards assigned to someone else, unblock and reopen.
func TestMCPPlanning(t *testing.T) {
	cs, _ := connect(t)
	ids := func(v any) []string {
		var out []string
		for _, c := range field(v, "cards").([]any) {
			out = append(out, field(c, "id").(string))
		}
		return out
	}
	call(t, cs, "create", map[string]any{"title": "for bob", "id": "A", "priority": 9, "assignee": "bob"})
	call(t, cs, "create", map[string]any{"title": "anyone", "id": "B", "priority": 5})
	call(t, cs, "create", map[string]any{"title": "later", "id": "W", "depends_on": []string{"B"}})
	_, c := call(t, cs, "assign", map[string]any{"id": "B", "assignee": "carol"})
	if field(c, "assignee") != "carol" || field(c, "status") != "ready" {
		t.Fatalf("assign = %v", c)
	}
	_, c = call(t, cs, "assign", map[string]any{"id": "B", "clear": true})
	if _, ok := c.(map[string]any)["assignee"]; ok {
		t.Fatalf("assign clear = %v", c)
	}
	_, c = call(t, cs, "update", map[string]any{"id": "W", "assignee": "dan"})
	if field(c, "assignee") != "dan" {
		t.Fatalf("update assignee = %v", c)
	}
	_, l := call(t, cs, "list", map[string]any{"assignee": "bob"})
	if got := ids(l); !slices.Equal(got, []string{"A"}) || field(field(l, "cards").([]any)[0], "assignee") != "bob" {
		t.Fatalf("list assignee bob = %v", l)
	}
	_, l = call(t, cs, "list", map[string]any{"state": []string{"waiting"}})
	if got := ids(l); !slices.Equal(got, []string{"W"}) || field(field(l, "cards").([]any)[0], "state") != "waiting" {
		t.Fatalf("list state waiting = %v", l)
	}
	_, e := call(t, cs, "list", map[string]any{"state": []string{"snoozing"}}, true)
	if field(e, "code") != "usage" {
		t.Fatalf("list state snoozing = %v", e)
	}
	_, r := call(t, cs, "ready", map[string]any{"owner": "w1"})
	if got := ids(r); !slices.Equal(got, []string{"B"}) {
		t.Fatalf("ready for w1 = %v", r)
	}
	_, r = call(t, cs, "ready", map[string]any{"owner": "w1", "any": true})
	if got := ids(r); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("ready any = %v", r)
	}
	_, c = call(t, cs, "claim", map[string]any{"owner": "w1"})
	if field(c, "id") != "B" {
		t.Fatalf("claim by w1 = %v", c)
	}
	if text, _ := call(t, cs, "claim", map[string]any{"owner": "w1"}); text != "null" {
		t.Fatalf("second claim by w1 = %s", text)
	}
	_, c = call(t, cs, "claim", map[string]any{"owner": "bob", "mine": true})
	if field(c, "id") != "A" {
		t.Fatalf("claim mine by bob = %v", c)
	}
	call(t, cs, "complete", map[string]any{"id": "A", "owner": "bob", "epoch": 1})
	_, c = call(t, cs, "reopen", map[string]any{"id": "A"})
	if field(c, "status") != "ready" {
		t.Fatalf("reopen = %v", c)
	}
	call(t, cs, "block", map[string]any{"id": "A", "reason": "needs a decision"})
	_, c = call(t, cs, "unblock", map[string]any{"id": "A"})
	if field(c, "status") != "ready" {
		t.Fatalf("unblock = %v", c)
	}
	_, e = call(t, cs, "reopen", map[string]any{"id": "A"}, true)
	if field(e, "code") != "conflict" {
		t.Fatalf("reopen of a ready card = %v", e)
	}
}
