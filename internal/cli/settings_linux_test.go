package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/bl-backlog/bl/ledger"
)

// opensIn counts the files opened in dir while fn runs, by name (inotify:
// the kernel's count, whoever opens them). Closes are watched too, only
// so that two opens of one file are not merged into one event.
func opensIn(t *testing.T, dir string, fn func()) map[string]int {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_CLOSE); err != nil {
		t.Fatal(err)
	}
	fn()
	opens := map[string]int{}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EAGAIN || n <= 0 {
			return opens
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			if ev.Mask&syscall.IN_OPEN != 0 {
				opens[string(bytes.TrimRight(name, "\x00"))]++
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// TestOwnerCommandsReadSettingsOnce: the hot writes read config.json once
// per call, though the hand-over decides on claims.remote before the
// backlog is opened; through an arbiter set in arbiter.json, the
// heartbeat reads that file once too, though it asks twice (whether the
// remote may skip the push, and where the write goes).
func TestOwnerCommandsReadSettingsOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".backlog")
	run := func(ext Extensions, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(ext, append([]string{"--dir", dir, "--actor", "t"}, args...), &out, &errb); code != 0 {
			t.Fatalf("bl %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	run(Extensions{}, "init")
	id := strings.Fields(run(Extensions{}, "create", "--title", "one"))[1]
	run(Extensions{}, "create", "--title", "two")
	for _, args := range [][]string{
		{"create", "--title", "three"},
		{"claim", "--id", id, "--owner", "w", "--ttl", "1h"},
		{"heartbeat", "--id", id, "--owner", "w"},
		{"note", "--id", id, "a note"},
		{"complete", "--id", id, "--owner", "w"},
	} {
		opens := opensIn(t, dir, func() { run(Extensions{}, args...) })
		if opens[ledger.ConfigFile] != 1 {
			t.Errorf("bl %s opened %s %d times, want once", args[0], ledger.ConfigFile, opens[ledger.ConfigFile])
		}
	}

	// bl-git, through an arbiter named in arbiter.json, with claims.remote
	// set (the heartbeat then asks whether it may skip the push).
	setConfig(t, dir, map[string]any{"claims": map[string]any{"remote": "origin"}})
	if err := os.WriteFile(filepath.Join(dir, ArbiterFile), []byte(`{"url":"nats://127.0.0.1:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	git := Extensions{Git: stubGit{}, Arbiter: localArbiter{}}
	id = strings.Fields(run(Extensions{}, "create", "--title", "four"))[1]
	for _, args := range [][]string{
		{"claim", "--id", id, "--owner", "w", "--ttl", "1h"},
		{"heartbeat", "--id", id, "--owner", "w"},
		{"complete", "--id", id, "--owner", "w"},
	} {
		opens := opensIn(t, dir, func() { run(git, args...) })
		for _, f := range []string{ledger.ConfigFile, ArbiterFile} {
			if opens[f] != 1 {
				t.Errorf("bl-git %s through the arbiter opened %s %d times, want once", args[0], f, opens[f])
			}
		}
	}
}

// setConfig merges keys into the backlog's config.json.
func setConfig(t *testing.T, dir string, keys map[string]any) {
	t.Helper()
	path := filepath.Join(dir, ledger.ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range keys {
		cfg[k] = v
	}
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stubGit stands for bl-git's git: present, never called.
type stubGit struct{ Git }

// localArbiter is an arbiter that grants everything: each write is made
// in the clone.
type localArbiter struct{ Arbiter }

func (localArbiter) Claim(ctx context.Context, b *ledger.Backlog, _ ArbiterSettings, req ledger.ClaimRequest) (*ledger.Card, error) {
	return b.Claim(ctx, req)
}

func (localArbiter) Lease(ctx context.Context, _ *ledger.Backlog, _ ArbiterSettings, _, rid string, do func(context.Context, string) (ledger.Card, error)) (ledger.Card, error) {
	return do(ctx, rid)
}
