package serve

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

// keepAlive is how often an idle stream sends a comment, so proxies and
// browsers keep the connection open.
var keepAlive = 15 * time.Second

// historyBatch bounds the events one history read sends before the
// stream looks at the ring again.
const historyBatch = 1024

// events is /api/events: bl watch --json as Server-Sent Events. Each event
// is one "data:" line with the event's JSON and an "id:" line with its
// cursor, so a browser's EventSource resumes by itself after a drop
// (Last-Event-ID); ?from=CURSOR resumes a fresh connection. Without either
// the stream starts at the end, as bl watch does. ?id=CARD and ?op=OPS
// narrow it as bl watch's flags do. A cursor older than what the server
// keeps in memory is served from the ledger's history, archives included,
// so a resume across a compaction misses nothing.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "error", "this connection cannot stream")
		return
	}
	st := &stream{w: w, fl: fl, buf: make([]byte, 0, 4096)}
	if err := s.openStream(st, r); err != nil {
		ledgerError(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	fl.Flush()
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()

	ctx := r.Context()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		evs, wake, inRing, herr := s.hub.after(st.from)
		if !inRing {
			// Older than the ring: read the history from the files.
			n, err := s.sendHistory(st)
			if err != nil {
				return
			}
			if n > 0 {
				continue
			}
			// Nothing newer in the files yet: wait for the follower.
		}
		if st.sendRing(evs) != nil {
			return
		}
		if herr != nil && len(evs) == 0 {
			if !errors.Is(herr, errStopped) {
				fmt.Fprintf(w, "event: error\ndata: %q\n\n", herr.Error())
				fl.Flush()
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// stream is one client's event stream: where it stands and what it wants.
type stream struct {
	w      http.ResponseWriter
	fl     http.Flusher
	buf    []byte // one event's bytes, reused
	filter ledger.HistoryFilter
	from   ledger.Cursor // the last event looked at, sent or not
}

// openStream reads the request's filter and where to start: the
// browser's Last-Event-ID, else ?from, else the end.
func (s *Server) openStream(st *stream, r *http.Request) error {
	q := r.URL.Query()
	ops, err := ledger.ParseOps(q.Get("op"))
	if err != nil {
		return err
	}
	st.filter = ledger.HistoryFilter{Card: q.Get("id"), Ops: ops}
	raw := r.Header.Get("Last-Event-ID")
	if raw == "" {
		raw = q.Get("from")
	}
	if st.from, err = ledger.ParseCursor(raw); err != nil {
		return err
	}
	if raw == "" {
		st.from = s.hub.last()
	}
	return nil
}

// take moves the stream's cursor past e and reports whether the client
// wants e: the cursor moves over filtered events too, so a resume does not
// read them again.
func (st *stream) take(e *ledger.Event) bool {
	st.from = ledger.CursorOf(e)
	return st.filter.Matches(e)
}

// send writes one event, its cursor as its id.
func (st *stream) send(e *ledger.Event, line []byte) error {
	st.buf = append(st.buf[:0], "id: "...)
	st.buf = append(st.buf, ledger.CursorOf(e).String()...)
	st.buf = append(st.buf, "\ndata: "...)
	st.buf = append(st.buf, line...)
	st.buf = append(st.buf, "\n\n"...)
	_, err := st.w.Write(st.buf)
	return err
}

// sendHistory sends up to historyBatch events after the stream's cursor
// from the ledger's files and returns how many it read.
func (s *Server) sendHistory(st *stream) (int, error) {
	n := 0
	_, err := s.b.History(ledger.HistoryFilter{From: st.from, Limit: historyBatch}, func(e *ledger.Event, _ *ledger.Conflict) error {
		n++
		if !st.take(e) {
			return nil
		}
		line, err := cli.AppendEventJSON(nil, e, nil)
		if err != nil {
			return err
		}
		return st.send(e, line)
	})
	if err != nil {
		return n, err
	}
	st.fl.Flush()
	return n, nil
}

// sendRing sends the events the hub had in memory.
func (st *stream) sendRing(evs []hubEvent) error {
	for _, he := range evs {
		if !st.take(he.ev) {
			continue
		}
		if err := st.send(he.ev, he.line); err != nil {
			return err
		}
	}
	if len(evs) > 0 {
		st.fl.Flush()
	}
	return nil
}
