// Package serve is bl serve: one long-lived HTTP process showing a backlog
// live. It serves the board (embedded HTML, CSS and JavaScript, no build
// step and nothing fetched from the internet), the same JSON the command
// line prints under --json, the event stream of bl watch --json as
// Server-Sent Events, and Prometheus metrics.
//
// Only bl-git links this package (with the metrics library): the lean bl
// hands bl serve over, so the hot commands never pay for it.
//
// Security: loopback unless a token is given; with a token every request
// carries it; the Host header must name the bound address (no DNS
// rebinding); the board builds every user string as text, never as HTML,
// and a Content-Security-Policy forbids inline scripts; writes need
// --allow-writes and the per-process CSRF token.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/watch"
	"github.com/bl-backlog/bl/lock"
)

// Options configure a Server.
type Options struct {
	// Addr is host:port to listen on; DefaultAddr when empty.
	Addr string
	// Token, when set, is required on every request.
	Token string
	// AllowWrites lets the board block, unblock, reopen and reprioritise.
	AllowWrites bool
	// Actor signs the board's writes.
	Actor string
	// AfterWrite, when set, is given the events of each board write once
	// it returned (the hooks): that write's own, whatever else writes
	// through the backlog meanwhile.
	AfterWrite func(evs []*ledger.Event)
	// RingSize bounds the events kept in memory for streams that resume;
	// older cursors are served from the ledger's history. 4096 when 0.
	RingSize int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Fsync, when set, holds the fsync times of the backlog's appends
	// (given to ledger.Options.Synced when it was opened).
	Fsync *FsyncTimes
	// Current, when set, gives each request the backlog it runs on, at
	// its start: bl serve's, with config.json as it stands then. The
	// request keeps it to the end.
	Current func() Backlog
}

// DefaultAddr is where bl serve listens by default.
const DefaultAddr = "127.0.0.1:7788"

// Backlog is what bl serve reads and writes of a backlog (a
// *ledger.Backlog): the cards and their standing, the history, the
// figures, a view of the state, its directory to follow, and the writes a
// board with --allow-writes makes.
type Backlog interface {
	Dir() string
	Get(id string) (ledger.Card, error)
	List(f ledger.Filter, sortBy string) ([]ledger.Card, error)
	Standings(cards []ledger.Card) ([]ledger.Standing, error)
	Stats() (ledger.Stats, error)
	History(f ledger.HistoryFilter, fn func(e *ledger.Event, conflict *ledger.Conflict) error) (ledger.Cursor, error)
	View(fn func(s *ledger.State, now time.Time) error) error
	Block(ctx context.Context, r ledger.LeaseRequest) (ledger.Card, error)
	Unblock(ctx context.Context, m ledger.Mutation, id string) (ledger.Card, error)
	Reopen(ctx context.Context, m ledger.Mutation, id string) (ledger.Card, error)
	Update(ctx context.Context, r ledger.UpdateRequest) (ledger.Card, error)
	Note(ctx context.Context, r ledger.NoteRequest) (ledger.Card, error)
}

// Server is a running bl serve over one open backlog.
type Server struct {
	b       Backlog
	o       Options
	hub     *hub
	csrf    string
	metrics *metrics
	mux     *http.ServeMux

	mu        sync.Mutex
	login     string          // the one-time sign-in nonce; "" once used
	hosts     map[string]bool // Host header values accepted
	anyHost   bool            // bound to every interface: the token guards it
	listening string
	ready     chan struct{} // closed once Run made the hub
}

// CheckAddr refuses an address anyone else could reach when no token
// guards it. The error matches ledger.ErrInvalid (exit 2).
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ledger.Errorf(ledger.ErrInvalid, "--addr %q is not HOST:PORT (e.g. 127.0.0.1:7788): %v", addr, err)
	}
	if token == "" && !isLoopback(host) {
		return ledger.Errorf(ledger.ErrInvalid, "refusing to serve on %s without --token: every machine that can reach it could read the backlog (and write, with --allow-writes); bind 127.0.0.1 or pass --token (or BL_SERVE_TOKEN)", addr)
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// New makes a server over b. It reads nothing yet.
func New(b Backlog, o Options) (*Server, error) {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if err := CheckAddr(o.Addr, o.Token); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RingSize <= 0 {
		o.RingSize = 4096
	}
	s := &Server{b: b, o: o, csrf: randomHex(16), hosts: map[string]bool{}, ready: make(chan struct{})}
	if o.Token != "" {
		s.login = randomHex(16)
	}
	s.metrics = newMetrics(s)
	s.routes()
	return s, nil
}

func randomHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}

// Listen binds the address and fixes the Host names accepted from then on.
func (s *Server) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return nil, fmt.Errorf("bl serve: listen on %s: %w", s.o.Addr, err)
	}
	s.bound(s.o.Addr, ln.Addr().String())
	return ln, nil
}

// bound records the Host header values that name the listener: the
// address as given and as bound, and for loopback the usual loopback
// names. A server bound to every interface cannot know its names; there
// the token (required off loopback) is the guard.
func (s *Server) bound(given, actual string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listening = actual
	gh, _, _ := net.SplitHostPort(given)
	_, port, _ := net.SplitHostPort(actual)
	if ip := net.ParseIP(gh); gh == "" || (ip != nil && ip.IsUnspecified()) {
		s.anyHost = true
	}
	s.hosts[strings.ToLower(net.JoinHostPort(gh, port))] = true
	s.hosts[strings.ToLower(actual)] = true
	if isLoopback(gh) {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			s.hosts[net.JoinHostPort(h, port)] = true
		}
	}
}

// URL is the board's address once listening.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	host, port, _ := net.SplitHostPort(s.listening)
	if gh, _, _ := net.SplitHostPort(s.o.Addr); gh != "" && !s.anyHost {
		host = gh
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// LoginURL is the one-time sign-in URL, "" without a token.
func (s *Server) LoginURL() string {
	s.mu.Lock()
	login := s.login
	s.mu.Unlock()
	if login == "" {
		return ""
	}
	return s.URL() + "?login=" + login
}

// Run follows the backlog and serves ln until ctx ends (SIGINT, SIGTERM),
// then shuts down: open streams end, requests in flight get a few seconds.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var base ledger.Cursor
	if err := s.b.View(func(st *ledger.State, _ time.Time) error {
		if last := st.Last(); last.ID != "" {
			base = ledger.CursorOf(&last)
		}
		return nil
	}); err != nil {
		return err
	}
	s.hub = newHub(base, s.o.RingSize)
	close(s.ready)
	followErr := make(chan error, 1)
	go func() {
		err := watch.Follow(ctx, s.b.Dir(), base, func(e *ledger.Event) error {
			s.metrics.observe(e, s.o.Now())
			return s.hub.add(e)
		})
		s.hub.stop(err)
		followErr <- err
	}()
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-followErr:
		if err != nil {
			err = fmt.Errorf("bl serve: following the backlog: %w", err)
		}
	case err = <-served:
	}
	cancel()
	shut, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if serr := srv.Shutdown(shut); serr != nil && err == nil && !errors.Is(serr, context.DeadlineExceeded) {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Handler is the whole site behind the guard.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

// guard applies the Host, token and header rules to every request.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if !s.hostOK(r.Host) {
			httpError(w, http.StatusMisdirectedRequest, "forbidden_host",
				fmt.Sprintf("Host %q is not the address bl serve is bound to; open %s", r.Host, s.URL()))
			return
		}
		if s.o.Token != "" && !s.authorized(w, r) {
			return
		}
		if s.o.Current != nil {
			r = r.WithContext(context.WithValue(r.Context(), backlogKey{}, s.o.Current()))
		}
		next.ServeHTTP(w, r)
	})
}

type backlogKey struct{}

// backlogOf is the backlog the request of ctx runs on (Options.Current);
// outside a request (the metrics), the current one.
func (s *Server) backlogOf(ctx context.Context) Backlog {
	if b, ok := ctx.Value(backlogKey{}).(Backlog); ok {
		return b
	}
	if s.o.Current != nil {
		return s.o.Current()
	}
	return s.b
}

func (s *Server) hostOK(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anyHost || s.hosts[strings.ToLower(host)]
}

// authorized checks the token: a bearer header, the cookie, or the
// one-time sign-in URL (which sets the cookie and redirects). It answers
// the request itself when it returns false or redirected.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenIs(auth) {
		return true
	}
	if c, err := r.Cookie(cookieName); err == nil && s.tokenIs(c.Value) {
		return true
	}
	if nonce := r.URL.Query().Get("login"); nonce != "" && r.Method == http.MethodGet {
		s.mu.Lock()
		ok := s.login != "" && subtle.ConstantTimeCompare([]byte(nonce), []byte(s.login)) == 1
		if ok {
			s.login = "" // one time only
		}
		s.mu.Unlock()
		if ok {
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
			return false
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="bl serve"`)
	httpError(w, http.StatusUnauthorized, "unauthorized", "this bl serve needs its token: send Authorization: Bearer TOKEN, or open the sign-in URL bl serve printed at start")
	return false
}

const cookieName = "bl_token"

func (s *Server) tokenIs(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.o.Token)) == 1
}

// httpError answers with the JSON error object bl prints under --json.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.MarshalWithOption(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code}, json.DisableHTMLEscape())
	_, _ = w.Write(append(b, '\n'))
}

// ledgerError answers with the status and code that match err.
func ledgerError(w http.ResponseWriter, err error) {
	status, code := http.StatusInternalServerError, "error"
	switch {
	case errors.Is(err, ledger.ErrInvalid):
		status, code = http.StatusBadRequest, "invalid"
	case errors.Is(err, ledger.ErrNotFound):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(err, ledger.ErrFenced):
		status, code = http.StatusConflict, "fenced"
	case errors.Is(err, ledger.ErrConflict):
		status, code = http.StatusConflict, "conflict"
	case errors.Is(err, lock.ErrTimeout):
		status, code = http.StatusServiceUnavailable, "lock_timeout"
	case errors.Is(err, ledger.ErrCorrupt):
		status, code = http.StatusInternalServerError, "corrupt"
	}
	httpError(w, status, code, err.Error())
}

// writeBody sends b as the response with content type ct.
func writeBody(w io.Writer, b []byte) { _, _ = w.Write(b) }
