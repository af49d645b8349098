//go:build unix

package serve_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/testbin"
	"github.com/bl-backlog/bl/ledger"
)

// TestServeReloadsConfig runs bl serve as a process and changes
// config.json under it: replaced by rename (as git pull and bl sync write
// it) and edited in place, the next request obeys the new setting (an epic
// with an open child becomes claimable once epics.wait_for_children is
// false). Garbage, a FIFO, a link out of the backlog and a file over 1 MiB
// keep the last good settings: the server answers on and says so once on
// stderr, naming the file.
func TestServeReloadsConfig(t *testing.T) {
	bin, err := testbin.Dir(testbin.Config{Race: testbin.Race}, "bl-git")
	if err != nil {
		t.Fatal(err)
	}
	blGit := filepath.Join(bin, "bl-git")
	root := t.TempDir()
	dir := filepath.Join(root, ".backlog")
	if _, err := ledger.Init(dir); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.json")
	orig, _ := os.ReadFile(config)
	env := append(os.Environ(), "BL_ACTOR=tester", "GORACE=atexit_sleep_ms=0")
	for _, args := range [][]string{{"create", "--id", "E1", "--title", "epic"}, {"create", "--id", "K1", "--title", "kid", "--parent", "E1"}} {
		cmd := exec.Command(blGit, append([]string{"--dir", dir}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(blGit, "--dir", dir, "serve", "--addr", addr)
	cmd.Env = env
	var stderr testbin.Output
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()

	// claimable is the board's claimable cards, as the page gets them.
	claimable := func(t *testing.T) []string {
		t.Helper()
		var resp *http.Response
		for deadline := time.Now().Add(patience); ; {
			resp, err = http.Get("http://" + addr + "/api/board")
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("bl serve does not answer: %v\n%s", err, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var board struct {
			Claimable []string `json:"claimable"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &board) != nil {
			t.Fatalf("/api/board: %d %s\n%s", resp.StatusCode, body, stderr.String())
		}
		slices.Sort(board.Claimable)
		return board.Claimable
	}
	epicWaits, epicFree := []string{"K1"}, []string{"E1", "K1"}
	if got := claimable(t); !slices.Equal(got, epicWaits) {
		t.Fatalf("at start: claimable %v", got)
	}

	free := []byte(`{"version": 1, "epics": {"wait_for_children": false}}` + "\n")
	tmp := filepath.Join(dir, "config.json.new")
	os.WriteFile(tmp, free, 0o644)
	if err := os.Rename(tmp, config); err != nil {
		t.Fatal(err)
	}
	if got := claimable(t); !slices.Equal(got, epicFree) {
		t.Fatalf("after a pull set epics.wait_for_children false: claimable %v\n%s", got, stderr.String())
	}
	stderr.Since(t, 0, "bl serve: "+config+" changed")
	// Edited in place, back and forth.
	os.WriteFile(config, orig, 0o644)
	if got := claimable(t); !slices.Equal(got, epicWaits) {
		t.Fatalf("after an edit in place back to the default: claimable %v", got)
	}
	os.WriteFile(config, free, 0o644)
	if got := claimable(t); !slices.Equal(got, epicFree) {
		t.Fatalf("after an edit in place: claimable %v", got)
	}

	outside := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(outside, orig, 0o644)
	for _, h := range []struct {
		name, said string
		spoil      func()
	}{
		{"garbage", "config.json", func() { os.WriteFile(config, []byte("{\"epics\": \x07"), 0o644) }},
		{"fifo", "FIFO", func() { os.Remove(config); syscall.Mkfifo(config, 0o644) }},
		{"link out", "outside the backlog", func() { os.Remove(config); os.Symlink(outside, config) }},
		{"huge", "more than bl reads", func() {
			os.Remove(config)
			os.WriteFile(config, append(bytes.Repeat([]byte("\n"), ledger.MaxConfigBytes), orig...), 0o644)
		}},
	} {
		t.Run(h.name, func(t *testing.T) {
			before := len(stderr.String())
			h.spoil()
			for range 2 {
				if got := claimable(t); !slices.Equal(got, epicFree) {
					t.Fatalf("claimable %v: the last good settings did not hold\n%s", got, stderr.String())
				}
			}
			said := stderr.Since(t, before, "going on with the settings read before")
			if strings.Count(said, "going on with the settings read before") != 1 || !strings.Contains(said, config) || !strings.Contains(said, h.said) {
				t.Fatalf("want the file named once, with %q; stderr: %q", h.said, said)
			}
			os.Remove(config)
			os.WriteFile(config, free, 0o644)
		})
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("bl serve after SIGINT: %v\n%s", err, stderr.String())
	}
}
