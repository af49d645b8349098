package serve

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

//go:embed assets
var assets embed.FS

var indexTmpl = template.Must(template.ParseFS(assets, "assets/index.html"))

// csp allows only this origin's own script, style and connections: no
// inline script, so a title that slipped through as HTML could not run.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	m.HandleFunc("GET /{$}", s.index)
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /api/board", s.board)
	m.HandleFunc("GET /api/cards", s.cards)
	m.HandleFunc("GET /api/cards/{id}", s.card)
	m.HandleFunc("GET /api/cards/{id}/history", s.history)
	m.HandleFunc("POST /api/cards/{id}/{action}", s.write)
	m.HandleFunc("GET /api/stats", s.stats)
	m.HandleFunc("GET /api/events", s.events)
	m.HandleFunc("GET /dag", s.dag)
	m.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	s.mux = m
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", csp)
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var buf bytes.Buffer
	if err := indexTmpl.Execute(&buf, struct {
		CSRF   string
		Writes bool
	}{s.csrf, s.o.AllowWrites}); err != nil {
		httpError(w, http.StatusInternalServerError, "error", err.Error())
		return
	}
	writeBody(w, buf.Bytes())
}

// sendJSON answers with v as bl --json prints it.
func sendJSON(w http.ResponseWriter, v any) {
	var buf bytes.Buffer
	if err := cli.WriteJSON(&buf, v); err != nil {
		httpError(w, http.StatusInternalServerError, "error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, buf.Bytes())
}

// cards is bl list --json, with the list flags as query parameters:
// status (comma-separated), phase, label, owner, ready, limit, sort.
func (s *Server) cards(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var f ledger.Filter
	for _, st := range strings.Split(q.Get("status"), ",") {
		if st = strings.TrimSpace(st); st == "" {
			continue
		}
		if !ledger.Status(st).Valid() {
			httpError(w, http.StatusBadRequest, "invalid", "status "+strconv.Quote(st)+" is not ready, claimed, blocked or done")
			return
		}
		f.Status = append(f.Status, ledger.Status(st))
	}
	f.Phase, f.Label, f.Owner = q.Get("phase"), q.Get("label"), q.Get("owner")
	f.Ready = q.Get("ready") == "true" || q.Get("ready") == "1"
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			httpError(w, http.StatusBadRequest, "invalid", "limit "+strconv.Quote(l)+" is not a count")
			return
		}
		f.Limit = n
	}
	sortBy := q.Get("sort")
	if sortBy == "" {
		sortBy = ledger.SortClaim
	}
	cards, err := s.backlogOf(r.Context()).List(f, sortBy)
	if err != nil {
		ledgerError(w, err)
		return
	}
	st, err := s.backlogOf(r.Context()).Standings(cards)
	if err != nil {
		ledgerError(w, err)
		return
	}
	b, ok := cli.CardsJSON(cards, st)
	if !ok {
		httpError(w, http.StatusInternalServerError, "error", "cards do not encode")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, append(b, '\n'))
}

// card is bl show --json: the card with where it stands.
func (s *Server) card(w http.ResponseWriter, r *http.Request) {
	c, err := s.backlogOf(r.Context()).Get(r.PathValue("id"))
	if err != nil {
		ledgerError(w, err)
		return
	}
	st, err := s.backlogOf(r.Context()).Standings([]ledger.Card{c})
	if err != nil {
		ledgerError(w, err)
		return
	}
	b, ok := cli.CardJSON(c, st[0])
	if !ok {
		httpError(w, http.StatusInternalServerError, "error", "the card does not encode")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, append(b, '\n'))
}

// history is the card's events as bl log --id ID --json prints them, as
// one JSON array.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.backlogOf(r.Context()).Get(id); err != nil {
		ledgerError(w, err)
		return
	}
	buf := []byte{'['}
	n := 0
	_, err := s.backlogOf(r.Context()).History(ledger.HistoryFilter{Card: id}, func(e *ledger.Event, c *ledger.Conflict) error {
		if n++; n > 1 {
			buf = append(buf, ',')
		}
		var err error
		buf, err = cli.AppendEventJSON(buf, e, c)
		return err
	})
	if err != nil {
		ledgerError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, append(buf, ']', '\n'))
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	st, err := s.backlogOf(r.Context()).Stats()
	if err != nil {
		ledgerError(w, err)
		return
	}
	sendJSON(w, st)
}

// board is what the page draws: every card as bl list --json prints it
// (with where it stands: the page's lanes are the command line's states),
// which of them are claimable now, the conflicts, the server's clock, and
// the cursor of the newest event folded, from which the page follows
// /api/events without a gap.
func (s *Server) board(w http.ResponseWriter, r *http.Request) {
	var (
		cards     []ledger.Card
		standings []ledger.Standing
		claimable = []string{}
		conflicts []ledger.Conflict
		cursor    string
		now       time.Time
	)
	err := s.backlogOf(r.Context()).View(func(st *ledger.State, at time.Time) error {
		now = at
		cards = st.List(ledger.Filter{}, at, ledger.SortClaim)
		standings = make([]ledger.Standing, len(cards))
		for i := range cards {
			standings[i] = st.Standing(&cards[i], at)
			if standings[i].Claimable {
				claimable = append(claimable, cards[i].ID)
			}
		}
		conflicts = st.Conflicts()
		if last := st.Last(); last.ID != "" {
			cursor = ledger.CursorOf(&last).String()
		}
		return nil
	})
	if err != nil {
		ledgerError(w, err)
		return
	}
	if conflicts == nil {
		conflicts = []ledger.Conflict{}
	}
	head, err := json.MarshalWithOption(struct {
		Now       time.Time         `json:"now"`
		Cursor    string            `json:"cursor"`
		Writes    bool              `json:"writes"`
		Claimable []string          `json:"claimable"`
		Conflicts []ledger.Conflict `json:"conflicts"`
	}{now, cursor, s.o.AllowWrites, claimable, conflicts}, json.DisableHTMLEscape())
	if err != nil {
		httpError(w, http.StatusInternalServerError, "error", err.Error())
		return
	}
	var buf bytes.Buffer
	buf.Write(head[:len(head)-1])
	buf.WriteString(`,"cards":`)
	list, ok := cli.CardsJSON(cards, standings)
	if !ok {
		httpError(w, http.StatusInternalServerError, "error", "cards do not encode")
		return
	}
	buf.Write(list)
	buf.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, buf.Bytes())
}

// dag is the html export's page (its dependency graph, drawn as SVG by
// package export, and its static board), for the board's graph pane.
func (s *Server) dag(w http.ResponseWriter, r *http.Request) {
	cards, err := s.backlogOf(r.Context()).List(ledger.Filter{}, ledger.SortClaim)
	if err != nil {
		ledgerError(w, err)
		return
	}
	page := export.RenderHTML(cards, export.Options{Title: "Dependencies", Now: s.o.Now().UTC(), Command: "bl serve"})
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'")
	w.Header().Set("X-Frame-Options", "SAMEORIGIN")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeBody(w, page)
}
