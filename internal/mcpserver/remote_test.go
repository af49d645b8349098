package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// remoteBacklog makes a bare remote (system git), a clone of it holding a
// backlog with claims.remote set to origin, the cards named, pushed; it
// returns the clone's backlog directory.
func remoteBacklog(t *testing.T, cards ...string) string {
	t.Helper()
	root := t.TempDir()
	gitconfig := filepath.Join(root, "gitconfig")
	os.WriteFile(gitconfig, []byte("[user]\n\tname = bl test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644)
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git(root, "init", "-q", "--bare", "remote.git")
	git(root, "clone", "-q", "remote.git", "work")
	backlog := filepath.Join(root, "work", ".backlog")
	if _, err := ledger.Init(backlog); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(backlog, ledger.ConfigFile)
	var c map[string]any
	data, _ := os.ReadFile(cfg)
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	c["claims"] = map[string]any{"remote": "origin"}
	data, _ = json.MarshalIndent(c, "", "  ")
	os.WriteFile(cfg, append(data, '\n'), 0o644)
	b, err := ledger.Open(backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range cards {
		if _, _, err := b.Create(t.Context(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "test"}, ID: id, Title: "card " + id}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	git(filepath.Join(root, "work"), "add", ".backlog")
	git(filepath.Join(root, "work"), "commit", "-q", "-m", "backlog")
	git(filepath.Join(root, "work"), "push", "-q", "origin", "main")
	return backlog
}

// callResult calls a tool and returns its decoded text and whether it was
// a tool error; safe from any goroutine (it never stops the test).
func (c *tsClient) callResult(tool string, args map[string]any) (v map[string]any, isError bool, err error) {
	r := c.do(map[string]any{"op": "call", "tool": tool, "args": args, "timeoutMs": 300000})
	if r.Error != "" {
		return nil, false, fmt.Errorf("TypeScript client: %s", r.Error)
	}
	var res toolResult
	if err := json.Unmarshal(r.Value, &res); err != nil || len(res.Result.Content) != 1 {
		return nil, false, fmt.Errorf("result %s", r.Value)
	}
	if err := json.Unmarshal([]byte(res.Result.Content[0].Text), &v); err != nil {
		return nil, false, fmt.Errorf("text is not a JSON object: %s", res.Result.Content[0].Text)
	}
	return v, res.Result.IsError, nil
}

// TestTypeScriptClientRemoteConcurrent: with claims.remote set, one bl mcp
// answers concurrent claim, heartbeat and note calls as if each came
// alone. A remote claim stages its write while the others run on the
// same backlog handle: none of them is staged in its place (which failed
// the note with an internal error and pushed it to another card's lease
// ref), and each call's hooks see only its own events.
func TestTypeScriptClientRemoteConcurrent(t *testing.T) {
	clientDir := tsClientDir(t)
	const workers, rounds = 4, 3
	var ids []string
	for w := range workers {
		for r := range rounds {
			ids = append(ids, fmt.Sprintf("K%d%d", w, r))
		}
	}
	backlog := remoteBacklog(t, append(ids, "H", "N0", "N1", "N2", "N3")...)
	c := startTS(t, clientDir, backlog)
	v, isErr, err := c.callResult("claim", map[string]any{"id": "H", "owner": "hb", "ttl": "1h"})
	if err != nil || isErr {
		t.Fatalf("remote claim of H: %v %v", v, err)
	}
	epoch := v["claim_epoch"]

	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// Claims and heartbeats go through the remote (a fetch and a push
	// each); notes are local writes, sent without pause until they end.
	var wg, notes sync.WaitGroup
	done := make(chan struct{})
	sent := make([]int, workers)
	for w := range workers {
		owner := fmt.Sprintf("ts%d", w)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := range rounds {
				id := fmt.Sprintf("K%d%d", w, r)
				v, isErr, err := c.callResult("claim", map[string]any{"id": id, "owner": owner, "ttl": "1h"})
				if err != nil || isErr || v["id"] != id || v["claim_owner"] != owner {
					fail("claim %s by %s: %v %v", id, owner, v, err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for r := range rounds {
				v, isErr, err := c.callResult("heartbeat", map[string]any{"id": "H", "owner": "hb", "epoch": epoch})
				if err != nil || isErr || v["id"] != "H" {
					fail("heartbeat %d of worker %d: %v %v", r, w, v, err)
				}
			}
		}()
		notes.Add(1)
		go func() {
			defer notes.Done()
			card := fmt.Sprintf("N%d", w)
			for ; sent[w] < 100; sent[w]++ {
				select {
				case <-done:
					return
				default:
				}
				text := fmt.Sprintf("note %d", sent[w])
				v, isErr, err := c.callResult("note", map[string]any{"id": card, "text": text})
				if err != nil || isErr || v["id"] != card {
					fail("%s on %s: %v %v", text, card, v, err)
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	notes.Wait()
	internal := 0
	for _, f := range failures {
		if strings.Contains(f, "internal") || strings.Contains(f, "staged") {
			internal++
		}
		t.Error(f)
	}
	if internal > 0 {
		t.Errorf("%d calls failed with an internal error", internal)
	}

	b, err := ledger.Open(backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for w := range workers {
		card, got := fmt.Sprintf("N%d", w), 0
		if _, err := b.History(ledger.HistoryFilter{Card: card, Ops: []ledger.Op{ledger.OpNote}}, func(*ledger.Event, *ledger.Conflict) error { got++; return nil }); err != nil || got != sent[w] {
			t.Errorf("%s has %d notes, want the %d sent (%v)", card, got, sent[w], err)
		}
	}
	for _, id := range ids {
		if c, err := b.Get(id); err != nil || c.Status != ledger.StatusClaimed {
			t.Errorf("%s is %s (%v), want claimed", id, c.Status, err)
		}
	}
}
