package serve

import (
	"errors"
	"sync"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

// hub is the one follower of the backlog that every event stream shares:
// a single watch (one fsnotify watcher however many browsers are open)
// feeds a bounded ring of recent events, each encoded once. A stream
// resumes from the ring when its cursor is in it and from the ledger's
// history (archives included, so across compactions) when it is older.
type hub struct {
	mu      sync.Mutex
	base    ledger.Cursor // every event after base is in ring (or not yet read)
	ring    []hubEvent    // oldest first
	max     int           // ring bound
	changed chan struct{} // closed and replaced on every append
	err     error         // the follower's error, once it stopped
}

// hubEvent is one event and its bl watch --json line.
type hubEvent struct {
	ev   *ledger.Event
	line []byte
}

// errStopped: the follower ended because the server is shutting down.
var errStopped = errors.New("bl serve: stopped")

func newHub(base ledger.Cursor, max int) *hub {
	return &hub{base: base, max: max, changed: make(chan struct{})}
}

// add appends e to the ring, dropping the oldest past the bound.
func (h *hub) add(e *ledger.Event) error {
	line, err := cli.AppendEventJSON(nil, e, nil)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ring) >= h.max {
		// Drop the older half at once, so the copy is paid once per
		// max/2 events rather than on every one.
		drop := max(1, len(h.ring)-h.max/2)
		h.base = ledger.CursorOf(h.ring[drop-1].ev)
		h.ring = append(h.ring[:0:0], h.ring[drop:]...)
	}
	h.ring = append(h.ring, hubEvent{ev: e, line: line})
	close(h.changed)
	h.changed = make(chan struct{})
	return nil
}

// stop records why the follower ended and wakes every stream.
func (h *hub) stop(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		err = errStopped
	}
	h.err = err
	close(h.changed)
	h.changed = make(chan struct{})
}

// last is the cursor of the newest event the hub knows.
func (h *hub) last() ledger.Cursor {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.ring); n > 0 {
		return ledger.CursorOf(h.ring[n-1].ev)
	}
	return h.base
}

// after returns the ring's events after from, a channel closed when more
// arrive, and inRing=false when from is older than the ring, so the
// caller must read history first.
func (h *hub) after(from ledger.Cursor) (evs []hubEvent, wake <-chan struct{}, inRing bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if from.Before(&ledger.Event{At: h.base.At, ID: h.base.ID}) && !h.base.IsZero() {
		return nil, h.changed, false, h.err
	}
	// The ring is in ledger order; find the first event after from.
	i := len(h.ring)
	for i > 0 && from.Before(h.ring[i-1].ev) {
		i--
	}
	return h.ring[i:], h.changed, true, h.err
}
