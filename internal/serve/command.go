package serve

import (
	"fmt"
	"sync"
	"time"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

// Command runs bl serve for the command line (bl-git passes it to
// cli.Main as Extensions.Serve). It prints where the board is on stderr, then serves until SIGINT or
// SIGTERM.
func Command(a *cli.App, c *cli.ServeCmd) error {
	if err := CheckAddr(c.Addr, c.Token); err != nil {
		return err
	}
	fsync := NewFsyncTimes()
	a.OnSynced(fsync.Observe)
	b, err := a.Open()
	if err != nil {
		return err
	}
	s, err := New(b, Options{Fsync: fsync,
		Addr: c.Addr, Token: c.Token, AllowWrites: c.AllowWrites, Actor: a.ActorName(), Now: a.Clock(),
		AfterWrite: hooksWorker(a), Current: current(a, b),
	})
	if err != nil {
		return err
	}
	ln, err := s.Listen()
	if err != nil {
		return err
	}
	mode := "read-only"
	if c.AllowWrites {
		mode = "writes allowed"
	}
	fmt.Fprintf(a.Stderr, "bl serve: the board of %s is at %s (%s); metrics at %smetrics; Ctrl-C stops\n", b.Dir(), s.URL(), mode, s.URL())
	if u := s.LoginURL(); u != "" {
		fmt.Fprintf(a.Stderr, "bl serve: sign in once by opening %s (a one-time URL); scripts send Authorization: Bearer <token>\n", u)
	}
	return s.Run(a.Context(), ln)
}

// current gives each request the backlog with config.json as it stands
// when the request starts (cli.Reloaded): a pulled or edited setting holds
// from the next request on, said on stderr; a file that fails start-up's
// checks is said once, and the last good settings stay.
func current(a *cli.App, b *ledger.Backlog) func() Backlog {
	var mu sync.Mutex
	note := func(msg string) { fmt.Fprintf(a.Stderr, "bl serve: %s\n", msg) }
	return func() Backlog {
		mu.Lock()
		defer mu.Unlock()
		b = cli.Reloaded(b, a.Warn, note)
		return b
	}
}

// hooksWorker runs the hooks of the board's writes one batch at a time, in
// the order the writes happened, outside the request: a slow hook delays
// the next hooks, never the board. A full queue makes the writer wait
// rather than drop hooks.
func hooksWorker(a *cli.App) func([]*ledger.Event) {
	queue := make(chan []*ledger.Event, 256)
	go func() {
		for evs := range queue {
			a.RunHooks(evs)
		}
	}()
	return func(evs []*ledger.Event) {
		select {
		case queue <- evs:
		case <-time.After(time.Minute):
			a.Warn(fmt.Sprintf("hooks not run for %d event(s): the hooks queue stayed full for a minute", len(evs)))
		}
	}
}
