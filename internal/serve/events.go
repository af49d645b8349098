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
	q := r.URL.Query()
	ops, err := ledger.ParseOps(q.Get("op"))
	if err != nil {
		ledgerError(w, err)
		return
	}
	filter := ledger.HistoryFilter{Card: q.Get("id"), Ops: ops}
	raw := r.Header.Get("Last-Event-ID")
	if raw == "" {
		raw = q.Get("from")
	}
	from, err := ledger.ParseCursor(raw)
	if err != nil {
		ledgerError(w, err)
		return
	}
	if raw == "" {
		from = s.hub.last()
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
	buf := make([]byte, 0, 4096)
	send := func(e *ledger.Event, line []byte) {
		buf = append(buf[:0], "id: "...)
		buf = append(buf, ledger.CursorOf(e).String()...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, line...)
		buf = append(buf, "\n\n"...)
	}
	for {
		evs, wake, inRing, herr := s.hub.after(from)
		if !inRing {
			// Older than the ring: read the history from the files.
			n := 0
			_, err := s.b.History(ledger.HistoryFilter{From: from, Limit: historyBatch}, func(e *ledger.Event, _ *ledger.Conflict) error {
				n++
				from = ledger.CursorOf(e)
				if !filter.Matches(e) {
					return nil
				}
				line, err := cli.AppendEventJSON(nil, e, nil)
				if err != nil {
					return err
				}
				send(e, line)
				_, err = w.Write(buf)
				return err
			})
			if err != nil {
				return
			}
			fl.Flush()
			if n > 0 {
				continue
			}
			// Nothing newer in the files yet: wait for the follower.
		}
		for _, he := range evs {
			from = ledger.CursorOf(he.ev)
			if !filter.Matches(he.ev) {
				continue
			}
			send(he.ev, he.line)
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
		if len(evs) > 0 {
			fl.Flush()
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
