package hooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bl-backlog/bl/hooks"
	"github.com/bl-backlog/bl/hooks/webhook"
	"github.com/bl-backlog/bl/ledger"
)

// backlogDir makes dir/.backlog holding hooks.json with content, outside
// any git repository: the test says it wrote the file (TrustEnv).
func backlogDir(t *testing.T, content string) string {
	t.Helper()
	t.Setenv(hooks.TrustEnv, "1")
	dir := filepath.Join(t.TempDir(), ".backlog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if content != "" {
		if err := os.WriteFile(filepath.Join(dir, hooks.File), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func load(t *testing.T, dir string) *hooks.Set {
	t.Helper()
	s, warning, err := hooks.Load(context.Background(), dir)
	if err != nil || warning != "" {
		t.Fatalf("Load: %v %q", err, warning)
	}
	if s != nil {
		s.Deliver = webhook.Deliver
	}
	return s
}

// TestNoDeliver: a Set given no way to post reports each webhook as a
// failure; nothing is posted behind the caller's back.
func TestNoDeliver(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer srv.Close()
	dir := backlogDir(t, `{"hooks": [{"on": ["claim"], "url": "`+srv.URL+`", "retries": 0}]}`)
	s, _, err := hooks.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	msgs := s.After(context.Background(), []hooks.Event{event(ledger.OpClaim, "A", "e1")})
	if len(msgs) != 1 || !strings.Contains(msgs[0], "cannot post webhooks") || posts.Load() != 0 {
		t.Errorf("messages %q, %d posts", msgs, posts.Load())
	}
}

func event(op ledger.Op, card, id string) hooks.Event {
	e := &ledger.Event{V: 1, ID: id, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Actor: "tester", Op: op, Card: card, Owner: "w1", Epoch: 2}
	return hooks.Event{Event: e, JSON: []byte(`{"op":"` + string(op) + `","card":"` + card + `"}`)}
}

func TestMissingFileIsNoHooks(t *testing.T) {
	dir := backlogDir(t, "")
	if s := load(t, dir); s != nil || s.Has("complete") {
		t.Fatal("no hooks.json should mean no hooks")
	}
	if msgs := (*hooks.Set)(nil).After(context.Background(), []hooks.Event{event(ledger.OpCreate, "A", "1")}); msgs != nil {
		t.Fatal(msgs)
	}
}

// TestOrderAndPayload: hooks run per event in event order, then in file
// order, each with the event JSON on stdin and the BL_* variables.
func TestOrderAndPayload(t *testing.T) {
	dir := backlogDir(t, `{"hooks": [
	  {"name": "one", "on": ["complete", "claim"], "command": ["sh", "-c", "printf 'one %s %s %s %s %s ' \"$BL_OP\" \"$BL_CARD\" \"$BL_EVENT_ID\" \"$BL_OWNER\" \"$BL_EPOCH\" >> log; cat >> log"]},
	  {"name": "two", "on": ["*"], "command": ["sh", "-c", "printf 'two %s %s %s %s\n' \"$BL_OP\" \"$BL_HOOK\" \"$BL_IN_HOOK\" \"$(basename \"$BL_DIR\")\" >> log"]}
	]}`)
	s := load(t, dir)
	if !s.Has("claim") || !s.Has("create") || s.Has(hooks.PreComplete) {
		t.Fatal("Has")
	}
	msgs := s.After(context.Background(), []hooks.Event{event(ledger.OpClaim, "A", "e1"), event(ledger.OpCreate, "B", "e2"), event(ledger.OpComplete, "A", "e3")})
	if len(msgs) != 0 {
		t.Fatal(msgs)
	}
	got, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "log"))
	if err != nil {
		t.Fatal(err)
	}
	want := `one claim A e1 w1 2 {"op":"claim","card":"A"}
two claim two 1 .backlog
two create two 1 .backlog
one complete A e3 w1 2 {"op":"complete","card":"A"}
two complete two 1 .backlog
`
	if string(got) != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

// TestTimeout: a hook that outlives its timeout is killed (its children
// too) and reported; the call returns soon after the timeout.
func TestTimeout(t *testing.T) {
	dir := backlogDir(t, `{"hooks": [{"name": "slow", "on": ["claim"], "command": ["sh", "-c", "sleep 30 & sleep 30"], "timeout": "200ms"}]}`)
	s := load(t, dir)
	start := time.Now()
	msgs := s.After(context.Background(), []hooks.Event{event(ledger.OpClaim, "A", "e1")})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a 200ms hook held the call %s", d)
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], `hook "slow" after claim of A failed: timed out after 200ms`) {
		t.Errorf("messages: %q", msgs)
	}
}

// TestFailingHook: a failure is reported with its output, and the hooks
// after it still run.
func TestFailingHook(t *testing.T) {
	dir := backlogDir(t, `{"hooks": [
	  {"name": "bad", "on": ["complete"], "command": ["sh", "-c", "echo it broke >&2; exit 7"]},
	  {"name": "missing", "on": ["complete"], "command": ["/no/such/program"]},
	  {"name": "good", "on": ["complete"], "command": ["touch", "ran"]}
	]}`)
	msgs := load(t, dir).After(context.Background(), []hooks.Event{event(ledger.OpComplete, "A", "e1")})
	if len(msgs) != 2 || !strings.Contains(msgs[0], `hook "bad" after complete of A failed: exit status 7: it broke (the complete stands)`) ||
		!strings.Contains(msgs[1], `"missing"`) {
		t.Errorf("messages: %q", msgs)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "ran")); err != nil {
		t.Error("the hook after a failing one did not run")
	}
}

// TestPreComplete: the first validator that fails refuses with its
// message, as a conflict (exit 4); one that passes lets the completion on.
func TestPreComplete(t *testing.T) {
	dir := backlogDir(t, `{"hooks": [
	  {"name": "input", "on": ["pre-complete"], "command": ["sh", "-c", "cat > input.json; echo \"$BL_OP $BL_CARD $BL_OWNER $BL_EPOCH\" > env.txt"]},
	  {"name": "tests", "on": ["pre-complete"], "command": ["sh", "-c", "test -e ok || { echo 'go test: 2 failures'; exit 1; }"]},
	  {"name": "after", "on": ["complete"], "command": ["touch", "after-ran"]}
	]}`)
	s := load(t, dir)
	c := hooks.Completion{Card: []byte(`{"id":"A","title":"t"}`), CardID: "A", Owner: "w1", Epoch: 3, Note: "done", Actor: "me"}
	err := s.PreComplete(context.Background(), c)
	var r *hooks.Refused
	if !errors.As(err, &r) || !errors.Is(err, ledger.ErrConflict) || err.Error() != `pre-complete hook "tests" refused to complete A: go test: 2 failures` {
		t.Fatalf("PreComplete = %v", err)
	}
	root := filepath.Dir(dir)
	in, _ := os.ReadFile(filepath.Join(root, "input.json"))
	if string(in) != `{"op":"complete","card":{"id":"A","title":"t"},"owner":"w1","epoch":3,"note":"done","actor":"me"}`+"\n" {
		t.Errorf("validator stdin: %s", in)
	}
	env, _ := os.ReadFile(filepath.Join(root, "env.txt"))
	if string(env) != "pre-complete A w1 3\n" {
		t.Errorf("validator env: %q", env)
	}
	if _, err := os.Stat(filepath.Join(root, "after-ran")); err == nil {
		t.Error("an after-complete hook ran as a validator")
	}
	os.WriteFile(filepath.Join(root, "ok"), nil, 0o644)
	if err := s.PreComplete(context.Background(), c); err != nil {
		t.Fatalf("passing validators: %v", err)
	}
	// A validator that hangs refuses when its time is up.
	slow := backlogDir(t, `{"hooks": [{"name": "hang", "on": ["pre-complete"], "command": ["sleep", "30"], "timeout": "100ms"}]}`)
	err = load(t, slow).PreComplete(context.Background(), c)
	if !errors.As(err, &r) || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Fatalf("hanging validator: %v", err)
	}
}

// TestWebhook: the event JSON is posted with its op, id and an
// HMAC-SHA256 signature a receiver can check; a failed try is retried.
func TestWebhook(t *testing.T) {
	const secret = "k3y"
	var mu sync.Mutex
	var tries int
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		mu.Lock()
		defer mu.Unlock()
		tries++
		if !hmac.Equal([]byte(r.Header.Get(webhook.SignatureHeader)), []byte(want)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if tries == 1 {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		got = append(got, r.Method+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-BL-Event")+" "+r.Header.Get("X-BL-Delivery")+" "+string(body))
	}))
	defer srv.Close()
	dir := backlogDir(t, `{"hooks": [{"name": "web", "on": ["complete"], "url": "`+srv.URL+`/hook", "secret": "`+secret+`", "retries": 2, "timeout": "2s"}]}`)
	msgs := load(t, dir).After(context.Background(), []hooks.Event{event(ledger.OpComplete, "A", "e9")})
	if len(msgs) != 0 {
		t.Fatal(msgs)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries != 2 || len(got) != 1 || got[0] != `POST application/json complete e9 {"op":"complete","card":"A"}` {
		t.Errorf("tries %d, deliveries %q", tries, got)
	}
}

// TestWebhookGivesUp: a receiver that keeps failing is reported after
// the retries, each try bounded by the timeout.
func TestWebhookGivesUp(t *testing.T) {
	var tries int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		// Read the body, so a closed connection ends the context, and
		// answer only after the client gave up.
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	dir := backlogDir(t, `{"hooks": [{"on": ["claim"], "url": "`+srv.URL+`", "retries": 1, "timeout": "100ms"}]}`)
	msgs := load(t, dir).After(context.Background(), []hooks.Event{event(ledger.OpClaim, "A", "e1")})
	if len(msgs) != 1 || !strings.Contains(msgs[0], "after 2 tries") {
		t.Errorf("messages: %q", msgs)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries != 2 {
		t.Errorf("%d tries, want 2", tries)
	}
}

// TestUntrustedFiles: a hooks.json git tracks, or a symbolic link, is
// not run: Load warns and returns no hooks.
func TestUntrustedFiles(t *testing.T) {
	content := `{"hooks": [{"on": ["create"], "command": ["touch", "pwned"]}]}`
	link := backlogDir(t, "")
	real := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(real, []byte(content), 0o644)
	if err := os.Symlink(real, filepath.Join(link, hooks.File)); err != nil {
		t.Fatal(err)
	}
	s, warning, err := hooks.Load(context.Background(), link)
	if s != nil || err != nil || !strings.Contains(warning, "symbolic link") {
		t.Errorf("symlink: %v %q %v", s, warning, err)
	}

	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed: the tracked-file check needs it")
	}
	dir := backlogDir(t, content)
	repo := filepath.Dir(dir)
	for _, args := range [][]string{{"init", "-q"}, {"add", ".backlog/hooks.json"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	s, warning, err = hooks.Load(context.Background(), dir)
	if s != nil || err != nil || !strings.Contains(warning, "is tracked by git") || !strings.Contains(warning, "git rm --cached") {
		t.Errorf("tracked: %v %q %v", s, warning, err)
	}
	// Untracked in the same repository, it loads.
	cmd := exec.Command(git, "rm", "-q", "--cached", ".backlog/hooks.json")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git rm: %v\n%s", err, out)
	}
	if load(t, dir) == nil {
		t.Error("an untracked hooks.json did not load")
	}
}

// TestUncheckableFile: inside what looks like a repository but git cannot
// read (here an empty .git; in life, one owned by another user that git
// refuses), whether the file is tracked cannot be told, so it is not run.
func TestUncheckableFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := backlogDir(t, `{"hooks": [{"on": ["create"], "command": ["touch", "pwned"]}]}`)
	if err := os.Mkdir(filepath.Join(filepath.Dir(dir), ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(filepath.Dir(dir)))
	s, warning, err := hooks.Load(context.Background(), dir)
	if s != nil || err != nil || !strings.Contains(warning, "could not be checked with git ls-files") {
		t.Errorf("uncheckable: %v %q %v", s, warning, err)
	}
}

// TestInvalidFiles: mistakes are reported with the file and the hook.
func TestInvalidFiles(t *testing.T) {
	for content, want := range map[string]string{
		`{"hooks": [`:                     "hooks.json",
		`{"hooks": [{"command": ["x"]}]}`: `has no "on"`,
		`{"hooks": [{"on": ["create"]}]}`: `exactly one of "command"`,
		`{"hooks": [{"on": ["create"], "command": ["x"], "url": "http://x"}]}`:             `exactly one of "command"`,
		`{"hooks": [{"on": ["pre-complete"], "url": "http://x"}]}`:                         "must be a command",
		`{"hooks": [{"on": ["create"], "url": "file:///etc/passwd"}]}`:                     "http:// or https://",
		`{"hooks": [{"on": ["explode"], "command": ["x"]}]}`:                               `unknown op "explode"`,
		`{"hooks": [{"on": ["create"], "command": ["x"], "timeout": "soon"}]}`:             `timeout "soon"`,
		`{"hooks": [{"name": "n", "on": ["create"], "command": ["x"], "timeout": "-1s"}]}`: `hook 1 ("n")`,
	} {
		_, _, err := hooks.Load(context.Background(), backlogDir(t, content))
		if err == nil || !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", content, err, want)
		}
	}
}

// TestOutsideGitNeedsOptIn: outside a git repository (a tarball, git
// archive, a build context) hooks.json might have come with the files, so
// its hooks run only when the user says so.
func TestOutsideGitNeedsOptIn(t *testing.T) {
	dir := backlogDir(t, `{"hooks": [{"on": ["create"], "command": ["touch", "pwned"]}]}`)
	t.Setenv(hooks.TrustEnv, "")
	s, warning, err := hooks.Load(context.Background(), dir)
	if err != nil || s != nil || !strings.Contains(warning, hooks.TrustEnv+"=1") {
		t.Fatalf("Load outside git without %s: %v %v %q", hooks.TrustEnv, s, err, warning)
	}
	t.Setenv(hooks.TrustEnv, "1")
	if s := load(t, dir); !s.Has("create") {
		t.Fatal("with the opt-in, the hooks are not loaded")
	}
}

// TestWebhookNoRedirects: a receiver that redirects does not get the body
// and signature re-sent to the host it points at; the delivery fails and
// says why.
func TestWebhookNoRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	dir := backlogDir(t, `{"hooks": [{"on": ["complete"], "url": "`+srv.URL+`", "secret": "k", "timeout": "2s"}]}`)
	msgs := load(t, dir).After(context.Background(), []hooks.Event{event(ledger.OpComplete, "A", "e1")})
	if len(msgs) != 1 || !strings.Contains(msgs[0], "do not follow redirects") {
		t.Errorf("messages: %q", msgs)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the webhook followed the redirect: %d requests elsewhere", n)
	}
}
