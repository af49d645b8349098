package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

// patience bounds a wait for what must happen: long enough for a loaded
// machine, so only a fault runs out of it.
const patience = 2 * time.Minute

const actor = "tester"

// fixture is a backlog with a running server on a loopback port.
type fixture struct {
	t    *testing.T
	dir  string
	b    *ledger.Backlog
	s    *Server
	url  string // http://127.0.0.1:PORT
	host string // 127.0.0.1:PORT
	stop func()
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	return newFixtureWith(t, o, ledger.Options{})
}

// newFixtureWith opens the server's backlog with lo.
func newFixtureWith(t *testing.T, o Options, lo ledger.Options) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".backlog")
	if _, err := ledger.Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := ledger.Open(dir, lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Actor == "" {
		o.Actor = actor
	}
	s, err := New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	f := &fixture{t: t, dir: dir, b: b, s: s, host: ln.Addr().String()}
	f.url = "http://" + f.host
	var once sync.Once
	f.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(patience):
				t.Error("Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(f.stop)
	// The follower must be running before the test appends.
	select {
	case <-s.ready:
	case <-time.After(patience):
		t.Fatal("server did not start")
	}
	return f
}

func openBacklog(t *testing.T, dir string) *ledger.Backlog {
	t.Helper()
	b, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func (f *fixture) create(title string, deps ...string) ledger.Card {
	f.t.Helper()
	c, _, err := f.b.Create(context.Background(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: actor}, Title: title, DependsOn: deps, Phase: "M1"})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) get(path string, hdr ...string) (*http.Response, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp, body
}

// bl runs the command line on the fixture's backlog and returns what it
// prints.
func (f *fixture) bl(args ...string) []byte {
	f.t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main(cli.Extensions{}, append([]string{"--dir", f.dir}, args...), &out, &errb); code != 0 {
		f.t.Fatalf("bl %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.Bytes()
}

// TestEndpoints: every endpoint answers, and the JSON ones answer exactly
// what the command line prints under --json.
func TestEndpoints(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.create("first")
	bc := f.create("second", a.ID)

	resp, body := f.get("/")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `src="/static/board.js"`) {
		t.Fatalf("/: %d %s", resp.StatusCode, body)
	}
	for _, p := range []string{"/static/board.js", "/static/board.css"} {
		if resp, body := f.get(p); resp.StatusCode != 200 || len(body) < 100 {
			t.Errorf("%s: %d, %d bytes", p, resp.StatusCode, len(body))
		}
	}

	if resp, body := f.get("/api/cards"); resp.StatusCode != 200 || !bytes.Equal(body, f.bl("list", "--sort", ledger.SortClaim, "--json")) {
		t.Errorf("/api/cards: %d\n%s\nwant\n%s", resp.StatusCode, body, f.bl("list", "--sort", ledger.SortClaim, "--json"))
	}
	if _, body := f.get("/api/cards?ready=true"); !bytes.Equal(body, f.bl("list", "--ready", "--sort", ledger.SortClaim, "--json")) {
		t.Errorf("/api/cards?ready=true: %s\nwant\n%s", body, f.bl("list", "--ready", "--sort", ledger.SortClaim, "--json"))
	}
	if _, body := f.get("/api/cards?status=done"); string(body) != "[]\n" {
		t.Errorf("/api/cards?status=done = %q, want []", body)
	}
	if resp, _ := f.get("/api/cards?status=bogus"); resp.StatusCode != 400 {
		t.Errorf("bad status: %d", resp.StatusCode)
	}
	if resp, body := f.get("/api/cards/" + bc.ID); resp.StatusCode != 200 || !bytes.Equal(body, f.bl("show", bc.ID, "--json")) {
		t.Errorf("/api/cards/ID: %d %s\nwant\n%s", resp.StatusCode, body, f.bl("show", bc.ID, "--json"))
	}
	if resp, body := f.get("/api/cards/nope"); resp.StatusCode != 404 || !strings.Contains(string(body), `"code":"not_found"`) {
		t.Errorf("/api/cards/nope: %d %s", resp.StatusCode, body)
	}
	resp, body = f.get("/api/cards/" + a.ID + "/history")
	var hist []map[string]any
	if err := json.Unmarshal(body, &hist); err != nil || resp.StatusCode != 200 || len(hist) != 1 || hist[0]["op"] != "create" || hist[0]["card"] != a.ID {
		t.Errorf("history: %d %s (%v)", resp.StatusCode, body, err)
	}
	st, _ := f.b.Stats()
	resp, body = f.get("/api/stats")
	var gotSt ledger.Stats
	if err := json.Unmarshal(body, &gotSt); err != nil || resp.StatusCode != 200 || gotSt.Cards != st.Cards || gotSt.Claimable != 1 {
		t.Errorf("/api/stats: %d %s", resp.StatusCode, body)
	}

	resp, body = f.get("/api/board")
	var board struct {
		Cursor    string
		Claimable []string
		Cards     []ledger.Card
	}
	if err := json.Unmarshal(body, &board); err != nil || len(board.Cards) != 2 || len(board.Claimable) != 1 || board.Claimable[0] != a.ID || board.Cursor == "" {
		t.Errorf("/api/board: %d %s (%v)", resp.StatusCode, body, err)
	}

	resp, body = f.get("/metrics")
	if resp.StatusCode != 200 {
		t.Errorf("/metrics: %d", resp.StatusCode)
	}
	for _, m := range []string{`bl_cards{status="ready"} 2`, "bl_cards_claimable 1", "bl_cards_waiting 1", "bl_leases_expired 0",
		"bl_oldest_ready_age_seconds", "bl_ledger_events 2", "bl_event_delay_seconds_bucket", "bl_serve_append_seconds_bucket", "bl_fsync_seconds_bucket",
		`bl_conflicts{op="claim"} 0`, "bl_up 1", "go_goroutines"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	if resp, body := f.get("/dag"); resp.StatusCode != 200 || !strings.Contains(string(body), "<svg") {
		t.Errorf("/dag: %d", resp.StatusCode)
	}
	if resp, _ := f.get("/nothing-here"); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

// TestMetricsCountEvents: events from any writer are counted by op.
func TestMetricsCountEvents(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.create("x")
	other := openBacklog(t, f.dir)
	if _, err := other.Claim(context.Background(), ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "w"}, Owner: "w", ID: c.ID}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(patience)
	for {
		_, body := f.get("/metrics")
		if strings.Contains(string(body), `bl_events_total{op="claim"} 1`) && strings.Contains(string(body), `bl_events_total{op="create"} 1`) &&
			strings.Contains(string(body), "bl_event_delay_seconds_count 2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never counted the events:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEscaping: a title holding markup is data everywhere: JSON served as
// JSON (nosniff), the graph page escapes it, and the board page runs only
// its own script (CSP without inline scripts; the script itself sets text
// only — the browser test checks that end to end).
func TestEscaping(t *testing.T) {
	f := newFixture(t, Options{})
	evil := `<script>window.pwned=1</script><img src=x onerror=alert(1)>`
	f.create(evil)
	resp, body := f.get("/api/cards")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("/api/cards headers: %v", resp.Header)
	}
	if !strings.Contains(string(body), evil) {
		t.Errorf("--json stays exact: %s", body)
	}
	resp, body = f.get("/dag")
	if strings.Contains(string(body), "<script") || strings.Contains(string(body), "<img") || !strings.Contains(string(body), "&lt;script&gt;") {
		t.Errorf("/dag does not escape the title:\n%s", body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("/dag CSP = %q", csp)
	}
	resp, body = f.get("/")
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("/ CSP = %q", csp)
	}
	if strings.Contains(string(body), "pwned") {
		t.Error("the page embeds card data")
	}
	js, _ := assets.ReadFile("assets/board.js")
	if bytes.Contains(js, []byte("innerHTML")) || bytes.Contains(js, []byte("insertAdjacentHTML")) || bytes.Contains(js, []byte("document.write")) {
		t.Error("board.js must build user text with textContent only")
	}
}

// TestHostRule: a request naming another host (DNS rebinding) is refused;
// the loopback names of the bound port are accepted.
func TestHostRule(t *testing.T) {
	f := newFixture(t, Options{})
	_, port, _ := net.SplitHostPort(f.host)
	for host, want := range map[string]int{
		"evil.example:" + port:       421,
		"evil.example":               421,
		"127.0.0.1:" + port:          200,
		"localhost:" + port:          200,
		"LOCALHOST:" + port:          200,
		"[::1]:" + port:              200,
		"127.0.0.1:1":                421,
		"attacker.localhost:" + port: 421,
	} {
		if resp, body := f.get("/api/stats", "Host", host); resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d (%s)", host, resp.StatusCode, want, body)
		}
	}
}

// TestAddrNeedsToken: anything but loopback needs a token (exit 2 in the
// CLI: ErrInvalid).
func TestAddrNeedsToken(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7788", "", true},
		{"localhost:7788", "", true},
		{"[::1]:7788", "", true},
		{"0.0.0.0:7788", "", false},
		{":7788", "", false},
		{"192.168.1.5:7788", "", false},
		{"example.com:7788", "", false},
		{"0.0.0.0:7788", "t", true},
		{"nonsense", "t", false},
	} {
		err := CheckAddr(tc.addr, tc.token)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ledger.ErrInvalid)) {
			t.Errorf("CheckAddr(%q, %q) = %v", tc.addr, tc.token, err)
		}
		if err != nil && tc.token == "" && tc.addr != "nonsense" && !strings.Contains(err.Error(), "--token") {
			t.Errorf("message does not say why: %v", err)
		}
	}
}

// TestToken: with a token every request needs it: a bearer header, or the
// cookie the one-time sign-in URL sets.
func TestToken(t *testing.T) {
	f := newFixture(t, Options{Token: "s3cret"})
	for _, p := range []string{"/", "/api/cards", "/api/events", "/metrics", "/static/board.js"} {
		if resp, _ := f.get(p); resp.StatusCode != 401 {
			t.Errorf("%s without token: %d", p, resp.StatusCode)
		}
	}
	if resp, _ := f.get("/api/stats", "Authorization", "Bearer wrong"); resp.StatusCode != 401 {
		t.Errorf("wrong bearer: %d", resp.StatusCode)
	}
	if resp, _ := f.get("/api/stats", "Authorization", "Bearer s3cret"); resp.StatusCode != 200 {
		t.Errorf("bearer: %d", resp.StatusCode)
	}
	if resp, _ := f.get("/api/stats", "Cookie", "bl_token=s3cret"); resp.StatusCode != 200 {
		t.Errorf("cookie: %d", resp.StatusCode)
	}
	login := f.s.LoginURL()
	if !strings.Contains(login, "?login=") {
		t.Fatalf("login URL %q", login)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Errorf("sign-in: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if resp, err := c.Get(f.url + "/api/stats"); err != nil || resp.StatusCode != 200 {
		t.Errorf("after sign-in: %v %v", resp.StatusCode, err)
	}
	// One time only.
	if resp, _ := http.Get(login); resp.StatusCode != 401 {
		t.Errorf("second use of the sign-in URL: %d", resp.StatusCode)
	}
}

func (f *fixture) post(path, csrf, body string, hdr ...string) (*http.Response, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if csrf != "" {
		req.Header.Set(csrfHeader, csrf)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestWrites: read-only by default; with --allow-writes a write needs the
// page's CSRF token and the same origin, and the hooks see its events.
func TestWrites(t *testing.T) {
	ro := newFixture(t, Options{})
	c := ro.create("x")
	if resp, body := ro.post("/api/cards/"+c.ID+"/block", ro.s.csrf, `{"reason":"r"}`); resp.StatusCode != 403 || !strings.Contains(string(body), "read_only") {
		t.Errorf("read-only block: %d %s", resp.StatusCode, body)
	}

	var mu sync.Mutex
	var hooked []string
	// The backlog's Synced option is what the CLI wires to the fsync
	// histogram.
	fsync := NewFsyncTimes()
	lo := ledger.Options{Synced: fsync.Observe}
	f := newFixtureWith(t, Options{AllowWrites: true, Fsync: fsync,
		AfterWrite: func(evs []*ledger.Event) {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range evs {
				hooked = append(hooked, string(e.Op)+" "+e.Card)
			}
		}}, lo)
	c = f.create("y") // the test's own write: no hooks
	if resp, page := f.get("/"); !strings.Contains(string(page), f.s.csrf) || resp.StatusCode != 200 {
		t.Fatal("the page does not carry the CSRF token")
	}
	if resp, body := f.post("/api/cards/"+c.ID+"/block", "", `{"reason":"r"}`); resp.StatusCode != 403 || !strings.Contains(string(body), "csrf") {
		t.Errorf("no CSRF: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.post("/api/cards/"+c.ID+"/block", "wrong", `{}`); resp.StatusCode != 403 {
		t.Errorf("wrong CSRF: %d", resp.StatusCode)
	}
	if resp, _ := f.post("/api/cards/"+c.ID+"/block", f.s.csrf, `{}`, "Origin", "http://evil.example"); resp.StatusCode != 403 {
		t.Errorf("cross origin: %d", resp.StatusCode)
	}
	resp, body := f.post("/api/cards/"+c.ID+"/block", f.s.csrf, `{"reason":"waiting for <b>ops</b>"}`, "Origin", f.url)
	var got ledger.Card
	if json.Unmarshal(body, &got); resp.StatusCode != 200 || got.Status != ledger.StatusBlocked || got.BlockedReason != "waiting for <b>ops</b>" {
		t.Fatalf("block: %d %s", resp.StatusCode, body)
	}
	if resp, body := f.post("/api/cards/"+c.ID+"/reopen", f.s.csrf, ``); resp.StatusCode != 409 || !strings.Contains(string(body), "conflict") {
		t.Errorf("reopen of a blocked card: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.post("/api/cards/"+c.ID+"/unblock", f.s.csrf, ``); resp.StatusCode != 200 {
		t.Errorf("unblock: %d", resp.StatusCode)
	}
	resp, body = f.post("/api/cards/"+c.ID+"/priority", f.s.csrf, `{"priority": 7}`)
	if json.Unmarshal(body, &got); resp.StatusCode != 200 || got.Priority != 7 {
		t.Errorf("priority: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.post("/api/cards/"+c.ID+"/priority", f.s.csrf, `{"priority": "high"}`); resp.StatusCode != 400 {
		t.Errorf("bad priority: %d", resp.StatusCode)
	}
	resp, body = f.post("/api/cards/"+c.ID+"/note", f.s.csrf, `{"text": "looked at it <i>today</i>"}`)
	if json.Unmarshal(body, &got); resp.StatusCode != 200 || len(got.Notes) != 1 || got.Notes[0].Text != "looked at it <i>today</i>" {
		t.Errorf("note: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.post("/api/cards/"+c.ID+"/note", f.s.csrf, `{"text": ""}`); resp.StatusCode != 400 {
		t.Errorf("empty note: %d", resp.StatusCode)
	}
	if resp, _ := f.post("/api/cards/"+c.ID+"/delete", f.s.csrf, `{}`); resp.StatusCode != 404 {
		t.Errorf("unknown action: %d", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"block " + c.ID, "unblock " + c.ID, "update " + c.ID, "note " + c.ID}
	if fmt.Sprint(hooked) != fmt.Sprint(want) {
		t.Errorf("hooks saw %v, want %v", hooked, want)
	}
	_, m := f.get("/metrics")
	if !strings.Contains(string(m), `bl_serve_writes_total{action="block",result="ok"} 1`) || !strings.Contains(string(m), `bl_serve_writes_total{action="reopen",result="conflict"} 1`) {
		t.Errorf("write metrics missing:\n%s", m)
	}
	// Every append's fsync: the test's create and the board's block,
	// unblock, priority and note.
	if !strings.Contains(string(m), "bl_fsync_seconds_count 5\n") {
		t.Errorf("bl_fsync_seconds does not count the 5 appends:\n%s", m)
	}
}

// sseEvent is one event read from a stream.
type sseEvent struct {
	id   string
	data map[string]any
}

// readSSE reads events from body onto a channel until it ends.
func readSSE(body io.Reader, out chan<- sseEvent) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.data != nil {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &ev.data); err != nil {
				return fmt.Errorf("bad data line %q: %w", line, err)
			}
		}
	}
	return sc.Err()
}

// stream opens /api/events with the given query and header values.
func (f *fixture) stream(ctx context.Context, query string, hdr ...string) (<-chan sseEvent, func()) {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/api/events"+query, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		f.t.Fatalf("/api/events%s: %d %s", query, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 1024)
	go func() {
		defer close(out)
		_ = readSSE(resp.Body, out)
	}()
	return out, func() { resp.Body.Close() }
}

func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-time.After(patience):
		t.Fatal("no event")
	}
	return sseEvent{}
}

// allEvents is the backlog's whole history as cursors.
func allEvents(t *testing.T, b *ledger.Backlog) []string {
	t.Helper()
	var out []string
	if _, err := b.History(ledger.HistoryFilter{}, func(e *ledger.Event, _ *ledger.Conflict) error {
		out = append(out, ledger.CursorOf(e).String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEventsResumeAcrossCompaction: a stream resumed from a cursor gets
// every event after it exactly once, in order, though a compaction moved
// them into an archive and the server keeps only the newest in memory;
// then it goes on live. Last-Event-ID wins over ?from.
func TestEventsResumeAcrossCompaction(t *testing.T) {
	f := newFixture(t, Options{RingSize: 2})
	ctx := context.Background()
	var ids []string
	for i := range 6 {
		ids = append(ids, f.create(fmt.Sprintf("card %d", i)).ID)
	}
	if _, err := f.b.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	f.create("after compaction")
	all := allEvents(t, f.b)
	if len(all) != 7 {
		t.Fatalf("history holds %d events", len(all))
	}
	// Wait until the server has read everything, so its ring holds only
	// the last two.
	for deadline := time.Now().Add(patience); f.s.hub.last().String() != all[6]; {
		if time.Now().After(deadline) {
			t.Fatal("server never caught up")
		}
		time.Sleep(5 * time.Millisecond)
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, closeFn := f.stream(sctx, "?from="+all[1])
	for i := 2; i < 7; i++ {
		if ev := next(t, ch); ev.id != all[i] || ev.data["cursor"] != all[i] {
			t.Fatalf("event %d: id %s cursor %v, want %s", i, ev.id, ev.data["cursor"], all[i])
		}
	}
	live := f.create("live")
	if ev := next(t, ch); ev.data["card"] != live.ID || ev.data["op"] != "create" {
		t.Fatalf("live event: %v", ev.data)
	}
	closeFn()

	// Resume with Last-Event-ID (as a browser's EventSource does); it wins
	// over a stale ?from in the URL.
	ch2, close2 := f.stream(sctx, "?from="+all[0], "Last-Event-ID", all[4])
	defer close2()
	for i := 5; i < 7; i++ {
		if ev := next(t, ch2); ev.id != all[i] {
			t.Fatalf("Last-Event-ID resume, event %d: %s, want %s", i, ev.id, all[i])
		}
	}
	if ev := next(t, ch2); ev.data["card"] != live.ID {
		t.Fatalf("after the history: %v", ev.data)
	}
	// A filter narrows the stream as bl watch --id does.
	ch3, close3 := f.stream(sctx, "?from="+all[0]+"&id="+ids[3])
	defer close3()
	if ev := next(t, ch3); ev.data["card"] != ids[3] {
		t.Fatalf("filtered stream: %v", ev.data)
	}
	// Without a cursor the stream starts at the end.
	ch4, close4 := f.stream(sctx, "")
	defer close4()
	last := f.create("newest")
	if ev := next(t, ch4); ev.data["card"] != last.ID {
		t.Fatalf("stream from the end: %v", ev.data)
	}
	if resp, _ := f.get("/api/events?from=garbage"); resp.StatusCode != 400 {
		t.Errorf("bad cursor: %d", resp.StatusCode)
	}
}

// TestEventsManyClients: 100 streams while 8 claimers claim and complete
// 150 cards: every stream gets every event exactly once and in ledger
// order, and the server's memory stays bounded.
func TestEventsManyClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	f := newFixture(t, Options{RingSize: 256})
	const cards, clients, claimers = 150, 100, 8
	for i := range cards {
		f.create(fmt.Sprintf("card %d", i))
	}
	start := allEvents(t, f.b)
	from := start[len(start)-1]
	for deadline := time.Now().Add(patience); f.s.hub.last().String() != from; {
		if time.Now().After(deadline) {
			t.Fatal("server never caught up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make([][]string, clients)
	var wg sync.WaitGroup
	streams := make([]<-chan sseEvent, clients)
	for i := range clients {
		ch, closeFn := f.stream(ctx, "?from="+from)
		defer closeFn()
		streams[i] = ch
	}
	want := 2 * cards // a claim and a complete per card
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range streams[i] {
				got[i] = append(got[i], ev.id)
				if len(got[i]) == want {
					return
				}
			}
		}()
	}
	var cw sync.WaitGroup
	for w := range claimers {
		cw.Add(1)
		go func() {
			defer cw.Done()
			b := openBacklog(t, f.dir)
			owner := fmt.Sprintf("w%d", w)
			for {
				c, err := b.Claim(ctx, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, Owner: owner})
				if err != nil {
					t.Error(err)
					return
				}
				if c == nil {
					return
				}
				if _, err := b.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: owner}, ID: c.ID, Owner: owner, Epoch: c.ClaimEpoch}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	cw.Wait()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("streams did not deliver every event")
	}
	all := allEvents(t, f.b)
	expect := all[len(start):]
	if len(expect) != want {
		t.Fatalf("ledger has %d new events, want %d", len(expect), want)
	}
	for i := range clients {
		if fmt.Sprint(got[i]) != fmt.Sprint(expect) {
			t.Fatalf("client %d got %d events, not the ledger's %d in order", i, len(got[i]), len(expect))
		}
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > 256<<20 {
		t.Errorf("heap in use %d MB after the run", ms.HeapInuse>>20)
	}
	f.s.hub.mu.Lock()
	n := len(f.s.hub.ring)
	f.s.hub.mu.Unlock()
	if n > 256 {
		t.Errorf("ring holds %d events, bound 256", n)
	}
}

// TestShutdown: ending the context (SIGINT, SIGTERM in bl serve) ends
// open streams and Run returns cleanly.
func TestShutdown(t *testing.T) {
	f := newFixture(t, Options{})
	ch, closeFn := f.stream(context.Background(), "")
	defer closeFn()
	start := time.Now()
	f.stop()
	for range ch {
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %s", d)
	}
}
