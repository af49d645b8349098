package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/bl-backlog/bl/gitdir"
)

// notifyContext is signal.NotifyContext; a test counts its calls.
var notifyContext = signal.NotifyContext

// catchSignals is notifyContext on SIGINT and SIGTERM for one signal
// only: once the first has cancelled the context, the handler lets go,
// so a second ends the process even when the command cannot look at its
// context (blocked opening a FIFO nobody writes), as Ctrl-C does anywhere.
//
// A command blocked in a system call that may never return (go-git
// opening a FIFO at .git/config: gitdir.MayBlock) cannot look at its
// context at all: the first signal ends the process then (exit 1,
// "interrupted"), as the second would.
func catchSignals(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := notifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		if parent.Err() == nil && context.Cause(ctx) != context.Canceled && gitdir.Interrupt() {
			fmt.Fprintln(os.Stderr, "bl: interrupted")
			os.Exit(exitError)
		}
		stop()
	}()
	return ctx, stop
}

// lazySignals is the context of the agents' commands (the hand-parsed
// claim, create, heartbeat, complete, note and version, and the reads
// ready, show and list, and bl diff): SIGINT and SIGTERM cancel it, as
// they cancel every command's, but the handler is installed only when the
// command first waits on the context (Done: a contended lock, claim
// --wait, a hook) or asks, deep in a long overlap decision, whether to
// stop (arm, through stopAsked). Installing it costs a short call about a
// fifth of its CPU: os/signal's goroutine locked to a thread of its own,
// the template thread that locking starts, the loop blocked in the
// runtime, and the threads that take over from each (docs/PERFORMANCE.md,
// "Start-up"). A signal that comes before any wait ends the process as it
// ends any program, as a crash would: the ledger holds what was durable.
type lazySignals struct {
	context.Context // the parent
	once            sync.Once
	armed           atomic.Pointer[context.Context]
	stop            context.CancelFunc
}

// arm installs the handler once and returns the context it cancels.
func (c *lazySignals) arm() context.Context {
	c.once.Do(func() {
		ctx, stop := catchSignals(c.Context)
		c.stop = stop
		c.armed.Store(&ctx)
	})
	if p := c.armed.Load(); p != nil {
		return *p
	}
	return c.Context // released before anything waited
}

// Done is where a command waits: from here on a signal cancels it.
func (c *lazySignals) Done() <-chan struct{} { return c.arm().Done() }

// Err reports the signal once the handler is installed; before, none was
// caught.
func (c *lazySignals) Err() error {
	if p := c.armed.Load(); p != nil {
		return (*p).Err()
	}
	return c.Context.Err()
}

// release ends the run: no handler is installed any more, and one that
// was lets the signals go.
func (c *lazySignals) release() {
	c.once.Do(func() {})
	if c.stop != nil {
		c.stop()
	}
}

// stopAsked is the backlog's Interrupted: a long overlap decision asks it
// every few thousand table cells whether the user gave up.
func (a *App) stopAsked() bool {
	if a.signals != nil {
		a.signals.arm()
	}
	return a.ctx.Err() != nil
}

// waits reports whether the hand-parsed command cmd is a claim --wait.
func waits(cmd any) bool {
	c, ok := cmd.(*ClaimCmd)
	return ok && c.Wait > 0
}

// readsOnly reports whether cmd, parsed by kong, is one of the agents'
// reads or bl diff, as the hand parse gives them: a signal before it
// waits ends it with nothing to undo.
func readsOnly(cmd any) bool {
	switch cmd.(type) {
	case *ReadyCmd, *ShowCmd, *ListCmd, *DiffCmd:
		return true
	}
	return false
}
