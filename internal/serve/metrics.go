package serve

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bl-backlog/bl/ledger"
)

// metrics are what /metrics exposes (docs/SERVE.md lists them). Gauges
// about the backlog are computed from the fold at scrape time, so they are
// exact whoever wrote; counters and histograms count what this server saw
// since it started: events from the watch stream (every writer) and its
// own writes.
type metrics struct {
	reg     *prometheus.Registry
	events  *prometheus.CounterVec
	delay   prometheus.Histogram
	writes  *prometheus.CounterVec
	append  prometheus.Histogram
	streams prometheus.Gauge
}

// FsyncTimes is bl_fsync_seconds: how long each append's fsync took on
// the server's backlog handle (every board write, and a slow disk shows
// here before anyone complains). Its Observe is the backlog's
// ledger.Options.Synced, so it is made before the backlog is opened and
// given to New through Options.Fsync.
type FsyncTimes struct{ h prometheus.Histogram }

// NewFsyncTimes returns an empty histogram.
func NewFsyncTimes() *FsyncTimes {
	return &FsyncTimes{prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "bl_fsync_seconds",
		Help:    "Duration of the fsync of each append this server's backlog handle made (a slow disk past BL_SLOW_FSYNC also warns on stderr).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})}
}

// Observe records one fsync.
func (f *FsyncTimes) Observe(d time.Duration) { f.h.Observe(d.Seconds()) }

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bl_events_total",
			Help: "Events appended to the backlog since bl serve started, by op (claim, complete, heartbeat, ...), from every writer.",
		}, []string{"op"}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bl_event_delay_seconds",
			Help:    "From an event's timestamp (taken by its writer under the lock, just before the append) to bl serve reading it: append, fsync and notification latency as the server observes it.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bl_serve_writes_total",
			Help: "Writes made from the board, by action and result (ok, fenced, conflict, invalid, lock_timeout, error).",
		}, []string{"action", "result"}),
		append: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bl_serve_append_seconds",
			Help:    "Duration of the board's own writes: lock, catch-up, validation, append and fsync.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bl_serve_event_streams",
			Help: "Open /api/events streams (board pages included).",
		}),
	}
	fsync := s.o.Fsync
	if fsync == nil {
		fsync = NewFsyncTimes() // always listed, if only as zero
	}
	m.reg.MustRegister(m.events, m.delay, m.writes, m.append, m.streams, fsync.h, &stateCollector{s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe counts an event read from the stream.
func (m *metrics) observe(e *ledger.Event, now time.Time) {
	m.events.WithLabelValues(string(e.Op)).Inc()
	if d := now.Sub(e.At); d >= 0 {
		m.delay.Observe(d.Seconds())
	}
}

func (m *metrics) writeDone(action string, err error, d time.Duration) {
	m.writes.WithLabelValues(action, resultOf(err)).Inc()
	if err == nil {
		m.append.Observe(d.Seconds())
	}
}

// stateCollector reads the backlog's gauges from the fold at scrape time.
type stateCollector struct{ s *Server }

var (
	descCards     = prometheus.NewDesc("bl_cards", "Cards by status.", []string{"status"}, nil)
	descClaimable = prometheus.NewDesc("bl_cards_claimable", "Cards claimable now: ready (or claimed with an expired lease), every dependency done, not deferred.", nil, nil)
	descWaiting   = prometheus.NewDesc("bl_cards_waiting", "Ready cards that are not claimable: waiting on a dependency or deferred.", nil, nil)
	descExpired   = prometheus.NewDesc("bl_leases_expired", "Claimed cards whose lease has run out (bl reclaim returns them).", nil, nil)
	descOldest    = prometheus.NewDesc("bl_oldest_ready_age_seconds", "Age of the oldest claimable card; 0 when none.", nil, nil)
	descLedger    = prometheus.NewDesc("bl_ledger_events", "Events in the backlog's whole history (snapshot and ledger).", nil, nil)
	descBytes     = prometheus.NewDesc("bl_ledger_bytes", "Size of ledger.jsonl.", nil, nil)
	descConflicts = prometheus.NewDesc("bl_conflicts", "Events the fold kept but rejected (e.g. two claims of one card merged from two clones), by op.", []string{"op"}, nil)
	descUp        = prometheus.NewDesc("bl_up", "1 when the backlog could be read at scrape time.", nil, nil)
	descEpics     = prometheus.NewDesc("bl_epics", "Cards that other cards name as parent (deleted children aside).", nil, nil)
	descDeleted   = prometheus.NewDesc("bl_cards_deleted", "Deleted cards (tombstones), not counted in bl_cards.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCards, descClaimable, descWaiting, descExpired, descOldest, descLedger, descBytes, descConflicts, descUp, descEpics, descDeleted} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b := c.s.backlogOf(context.Background())
	st, err := b.Stats()
	if err != nil {
		gauge(descUp, 0)
		return
	}
	waiting := 0
	conflicts := map[ledger.Op]int{}
	err = b.View(func(s *ledger.State, now time.Time) error {
		for _, card := range s.List(ledger.Filter{Status: []ledger.Status{ledger.StatusReady}}, now, ledger.SortID) {
			if !s.Claimable(card.ID, now) {
				waiting++
			}
		}
		for _, cf := range s.Conflicts() {
			conflicts[cf.Op]++
		}
		return nil
	})
	if err != nil {
		gauge(descUp, 0)
		return
	}
	gauge(descUp, 1)
	for _, status := range ledger.Statuses {
		gauge(descCards, float64(st.ByStatus[status]), string(status))
	}
	gauge(descClaimable, float64(st.Claimable))
	gauge(descEpics, float64(st.Epics))
	gauge(descDeleted, float64(st.Deleted))
	gauge(descWaiting, float64(waiting))
	gauge(descExpired, float64(st.ExpiredClaims))
	gauge(descOldest, st.OldestReadyAge)
	gauge(descLedger, float64(st.Events))
	gauge(descBytes, float64(st.LedgerBytes))
	for _, op := range ledger.Ops {
		gauge(descConflicts, float64(conflicts[op]), string(op))
	}
}
