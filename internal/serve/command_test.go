//go:build unix

package serve_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/internal/cli/gitcli"
	"github.com/bl-backlog/bl/internal/testbin"
	"github.com/bl-backlog/bl/ledger"
)

// patience bounds a wait for what must happen: long enough for a loaded
// machine, so only a fault runs out of it.
const patience = 2 * time.Minute

// TestCommand runs bl serve as bl-git does: a write from the board fires
// the hooks in hooks.json, and SIGINT ends the command with exit 0.
func TestCommand(t *testing.T) {
	t.Setenv("BL_TRUST_HOOKS", "1") // hooks.json outside a git repository
	root := t.TempDir()
	dir := filepath.Join(root, ".backlog")
	if _, err := ledger.Init(dir); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BL_ACTOR", "tester")
	var out bytes.Buffer
	if code := cli.Main(gitcli.Extensions(), []string{"--dir", dir, "create", "--id", "A1", "--title", "one"}, &out, &out); code != 0 {
		t.Fatalf("create: %d %s", code, out.String())
	}
	hooks := `{"hooks": [{"name": "log", "on": ["block"], "command": ["sh", "-c", "cat > hooked.json; echo \"$BL_OP $BL_CARD $BL_ACTOR\" >> hooked.json"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "hooks.json"), []byte(hooks), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var stderr testbin.Output
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(gitcli.Extensions(), []string{"--dir", dir, "serve", "--addr", addr, "--allow-writes"}, io.Discard, &stderr)
	}()
	base := "http://" + addr
	var page []byte
	for deadline := time.Now().Add(patience); ; {
		resp, err := http.Get(base + "/")
		if err == nil {
			page, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bl serve did not answer: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "bl serve: the board of "+dir+" is at "+base+"/ (writes allowed)") {
		t.Errorf("start message: %q", stderr.String())
	}
	m := regexp.MustCompile(`name="bl-csrf" content="([0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/cards/A1/block", strings.NewReader(`{"reason":"r"}`))
	req.Header.Set("X-BL-CSRF", string(m[1]))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("block: %v %v", resp, err)
	}
	resp.Body.Close()
	var hooked []byte
	for deadline := time.Now().Add(patience); ; {
		hooked, _ = os.ReadFile(filepath.Join(root, "hooked.json"))
		if bytes.HasSuffix(hooked, []byte("block A1 tester\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hook did not run after the board's write: %q\n%s", hooked, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !bytes.Contains(hooked, []byte(`"op":"block","card":"A1"`)) {
		t.Errorf("hook stdin: %s", hooked)
	}

	// SIGINT, as Ctrl-C sends it: bl serve's handler takes it.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("bl serve exited %d after SIGINT: %s", code, stderr.String())
		}
	case <-time.After(patience):
		t.Fatal("bl serve did not stop on SIGINT")
	}
}
