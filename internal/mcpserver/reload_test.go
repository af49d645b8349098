//go:build unix

package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bl-backlog/bl/internal/testbin"
	"github.com/bl-backlog/bl/ledger"
)

// configWith is the backlog's config.json with the settings given set
// (section "review" etc. replaced whole).
func configWith(t *testing.T, backlog string, set map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(backlog, "config.json.orig"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		cfg[k] = v
	}
	out, _ := json.Marshal(cfg)
	return append(out, '\n')
}

// replaceConfig writes config.json as git pull and bl sync do: a new file
// renamed over the old one.
func replaceConfig(t *testing.T, backlog string, data []byte) {
	t.Helper()
	tmp := filepath.Join(backlog, "config.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(backlog, "config.json")); err != nil {
		t.Fatal(err)
	}
}

// TestMCPReloadsConfig: a running bl mcp takes config.json changed under
// it (replaced by rename, as a pull writes it, and edited in place) from
// the next tool call on: review.required turned on gates the next
// complete, and turned off does not. A file that fails the checks start-up
// makes (garbage, a setting named twice, over 1 MiB, a FIFO, a link out of
// the backlog) keeps the last good settings: the server goes on serving,
// and says so once on stderr, naming the file. A claims.remote pulled in
// is held to start-up's rule (a local path is refused).
func TestMCPReloadsConfig(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	backlog := filepath.Join(dir, ".backlog")
	if _, err := ledger.Init(backlog); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(backlog, "config.json")
	orig, _ := os.ReadFile(config)
	os.WriteFile(config+".orig", orig, 0o644)

	exe, _ := os.Executable()
	blGit := filepath.Join(dir, "bl-git")
	os.WriteFile(blGit, []byte("#!/bin/sh\nBL_TEST_MAIN=bl-git exec '"+exe+"' \"$@\"\n"), 0o755)
	cmd := exec.Command(exe, "mcp")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BL_TEST_MAIN=bl", "BL_GIT="+blGit, "BL_DIR="+backlog, "BL_ACTOR=agent-host")
	var stderr testbin.Output
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bl-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	defer cs.Close()

	n := 0
	// finish claims a new card and completes it, returning its status.
	finish := func(t *testing.T) string {
		t.Helper()
		n++
		id := fmt.Sprintf("C%d", n)
		call(t, cs, "create", map[string]any{"id": id, "title": "card " + id})
		_, c := call(t, cs, "claim", map[string]any{"owner": "w1", "id": id})
		_, done := call(t, cs, "complete", map[string]any{"id": id, "owner": "w1", "epoch": field(c, "claim_epoch")})
		return field(done, "status").(string)
	}
	if got := finish(t); got != "done" {
		t.Fatalf("before any change: %s", got)
	}

	// A pull turns the review gate on: the running server holds it.
	replaceConfig(t, backlog, configWith(t, backlog, map[string]any{"review": map[string]any{"required": true}}))
	if got := finish(t); got != "review" {
		t.Fatalf("review.required pulled in: complete gave %s, want review\n%s", got, stderr.String())
	}
	stderr.Since(t, 0, config+" changed")
	// Edited in place: off again.
	if err := os.WriteFile(config, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := finish(t); got != "done" {
		t.Fatalf("review.required edited out: %s", got)
	}
	gated := configWith(t, backlog, map[string]any{"review": map[string]any{"required": true}})
	replaceConfig(t, backlog, gated)
	if got := finish(t); got != "review" {
		t.Fatalf("review.required back on: %s", got)
	}

	// Files that do not pass: the gate stays, the server serves on.
	outside := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(outside, orig, 0o644)
	hostile := []struct {
		name, said string
		spoil      func()
	}{
		{"garbage", "config.json", func() { replaceConfig(t, backlog, []byte("{\"version\":1,\x1b[2J garbage")) }},
		{"twice", "twice", func() {
			replaceConfig(t, backlog, []byte(`{"version":1,"review":{"required":true,"required":false}}`))
		}},
		{"huge", "more than bl reads", func() {
			replaceConfig(t, backlog, append(bytes.Repeat([]byte(" "), ledger.MaxConfigBytes+1), orig...))
		}},
		{"fifo", "FIFO", func() {
			os.Remove(config)
			if err := syscall.Mkfifo(config, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"link out", "outside the backlog", func() {
			os.Remove(config)
			os.Symlink(outside, config)
		}},
	}
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			before := len(stderr.String())
			h.spoil()
			if got := finish(t); got != "review" {
				t.Fatalf("complete gave %s: the last good settings (review.required) did not hold\n%s", got, stderr.String())
			}
			finish(t)
			said := stderr.Since(t, before, "going on with the settings read before")
			if strings.Count(said, "going on with the settings read before") != 1 || !strings.Contains(said, config) || !strings.Contains(said, h.said) {
				t.Fatalf("want the file named once, with %q; stderr: %q", h.said, said)
			}
			if strings.Contains(said, "\x1b") {
				t.Fatalf("a control character reached stderr: %q", said)
			}
			os.Remove(config)
			replaceConfig(t, backlog, gated)
		})
	}

	// hooks.json written while the server runs holds at the next event:
	// it is read at each hook point.
	hooked := filepath.Join(dir, "hooked")
	os.WriteFile(filepath.Join(backlog, "hooks.json"), []byte(`{"hooks": [{"on": ["complete", "review"], "command": ["touch", "`+hooked+`"]}]}`), 0o644)
	finish(t)
	if _, err := os.Stat(hooked); err != nil {
		t.Fatalf("a hooks.json written after the start did not run: %v\n%s", err, stderr.String())
	}

	// claims.remote pulled in names a local path: refused as at start-up,
	// not claimed locally behind the remote's back.
	replaceConfig(t, backlog, configWith(t, backlog, map[string]any{"claims": map[string]any{"remote": "../shared.git"}}))
	call(t, cs, "create", map[string]any{"id": "R1", "title": "remote"})
	text, _ := call(t, cs, "claim", map[string]any{"owner": "w1", "id": "R1"}, true)
	if !strings.Contains(text, `"exit_code":2`) || !strings.Contains(text, "local path") {
		t.Fatalf("claim with claims.remote a local path: %s", text)
	}
	_, card := call(t, cs, "show", map[string]any{"id": "R1"})
	if field(card, "status") != "ready" {
		t.Fatalf("R1 is %v", field(card, "status"))
	}
}
