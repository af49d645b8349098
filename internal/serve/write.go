package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/lock"
)

// csrfHeader carries the per-process CSRF token the board page holds. A
// page from another origin can neither read the token nor set the header
// without a CORS preflight, which this server never grants.
const csrfHeader = "X-BL-CSRF"

// writeBody is the JSON a board write posts.
type writeRequest struct {
	Reason   string `json:"reason"`
	Priority *int   `json:"priority"`
	Text     string `json:"text"`
}

// write is POST /api/cards/{id}/{action}: block (with a reason), unblock,
// reopen, priority, or note (with a text). It needs --allow-writes, the CSRF header and a
// JSON body; it answers with the card as bl prints it under --json.
func (s *Server) write(w http.ResponseWriter, r *http.Request) {
	if !s.writeAllowed(w, r) {
		return
	}
	var req writeRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, "invalid", "the body is not a JSON object like {\"reason\": \"...\"}: "+err.Error())
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	switch {
	case !slices.Contains([]string{"block", "unblock", "reopen", "priority", "note"}, action):
		httpError(w, http.StatusNotFound, "not_found", "unknown action "+action+": use block, unblock, reopen, priority or note")
		return
	case action == "priority" && req.Priority == nil:
		httpError(w, http.StatusBadRequest, "invalid", "priority needs {\"priority\": N}")
		return
	}
	// The write's own events, for its hooks (a concurrent write's are its).
	var mu sync.Mutex
	var evs []*ledger.Event
	ctx := ledger.OnAppended(r.Context(), func(e []*ledger.Event) {
		mu.Lock()
		evs = append(evs, e...)
		mu.Unlock()
	})
	start := time.Now()
	card, err := s.act(ctx, action, id, req)
	s.metrics.writeDone(action, err, time.Since(start))
	mu.Lock()
	if len(evs) > 0 && s.o.AfterWrite != nil {
		s.o.AfterWrite(evs)
	}
	mu.Unlock()
	if err != nil {
		ledgerError(w, err)
		return
	}
	sendJSON(w, card)
}

// writeAllowed refuses a write to a read-only server, without the page's
// CSRF token, or from another origin, and says so.
func (s *Server) writeAllowed(w http.ResponseWriter, r *http.Request) bool {
	if !s.o.AllowWrites {
		httpError(w, http.StatusForbidden, "read_only", "this bl serve is read-only; restart it with --allow-writes to change cards from the board")
		return false
	}
	if got := r.Header.Get(csrfHeader); subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
		httpError(w, http.StatusForbidden, "csrf", "missing or wrong "+csrfHeader+" header: reload the board")
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host && origin != "https://"+r.Host {
		httpError(w, http.StatusForbidden, "csrf", "cross-origin write refused")
		return false
	}
	return true
}

// act does one board action on card id as the server's actor.
func (s *Server) act(ctx context.Context, action, id string, req writeRequest) (ledger.Card, error) {
	m := ledger.Mutation{Actor: s.o.Actor}
	switch action {
	case "block":
		return s.backlogOf(ctx).Block(ctx, ledger.LeaseRequest{Mutation: m, ID: id, Reason: req.Reason})
	case "unblock":
		return s.backlogOf(ctx).Unblock(ctx, m, id)
	case "reopen":
		return s.backlogOf(ctx).Reopen(ctx, m, id)
	case "priority":
		return s.backlogOf(ctx).Update(ctx, ledger.UpdateRequest{Mutation: m, ID: id, Fields: ledger.Fields{Priority: req.Priority}})
	}
	return s.backlogOf(ctx).Note(ctx, ledger.NoteRequest{Mutation: m, ID: id, Text: req.Text})
}

// resultOf names a write's outcome for the metrics.
func resultOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ledger.ErrFenced):
		return "fenced"
	case errors.Is(err, ledger.ErrConflict):
		return "conflict"
	case errors.Is(err, ledger.ErrInvalid), errors.Is(err, ledger.ErrNotFound):
		return "invalid"
	case errors.Is(err, lock.ErrTimeout):
		return "lock_timeout"
	}
	return "error"
}
