package gitcli

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter"
	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

// Arbiter implements cli.Arbiter with package arbiter. A process keeps
// one connection per arbiter for all its calls: a command line makes one
// call, but bl run, bl mcp and bl daemon make many, and connecting is most
// of a call's cost.
type Arbiter struct{}

var _ cli.Arbiter = Arbiter{}

var conns struct {
	sync.Mutex
	m      map[cli.ArbiterSettings]*arbiter.Arbiter
	failed map[cli.ArbiterSettings]dialFailure // the last failed dial
}

type dialFailure struct {
	at  time.Time
	err error
}

// conn is the process's connection to the arbiter s names, dialled on
// first use and again after one failed.
func conn(ctx context.Context, s cli.ArbiterSettings) (*arbiter.Arbiter, error) {
	asked := time.Now()
	conns.Lock()
	defer conns.Unlock()
	if a := conns.m[s]; a != nil && !a.Closed() {
		return a, nil
	}
	// A dial that failed while this call waited for the lock answers it
	// too: the calls waiting (bl daemon's) would otherwise each wait out
	// the arbiter's timeout in turn.
	if f, ok := conns.failed[s]; ok && f.at.After(asked) {
		return nil, f.err
	}
	a, err := dial(ctx, s)
	if err != nil {
		if conns.failed == nil {
			conns.failed = map[cli.ArbiterSettings]dialFailure{}
		}
		conns.failed[s] = dialFailure{time.Now(), err}
		return nil, err
	}
	if conns.m == nil {
		conns.m = map[cli.ArbiterSettings]*arbiter.Arbiter{}
	}
	conns.m[s] = a
	return a, nil
}

// done drops the connection after a call that could not reach the
// arbiter: the next call dials again rather than wait on a dead one.
func done(s cli.ArbiterSettings, a *arbiter.Arbiter, err error) {
	var ue *arbiter.UnreachableError
	if !errors.As(err, &ue) {
		return
	}
	conns.Lock()
	defer conns.Unlock()
	if conns.m[s] == a {
		delete(conns.m, s)
		a.Close()
	}
}

func dial(ctx context.Context, s cli.ArbiterSettings) (*arbiter.Arbiter, error) {
	return arbiter.Dial(ctx, arbiter.Settings{URL: s.URL, Creds: s.Creds, NKey: s.NKey, CA: s.CA, Cert: s.Cert, Key: s.Key})
}

func (Arbiter) Claim(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, req ledger.ClaimRequest) (*ledger.Card, error) {
	a, err := conn(ctx, s)
	if err != nil {
		return nil, err
	}
	c, err := a.Claim(ctx, b, req)
	done(s, a, err)
	return c, err
}

func (Arbiter) ClaimWait(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error) {
	a, err := conn(ctx, s)
	if err != nil {
		return nil, err
	}
	c, err := a.ClaimWait(ctx, b, req, wait)
	done(s, a, err)
	return c, err
}

func (Arbiter) Lease(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, card, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, error) {
	a, err := conn(ctx, s)
	if err != nil {
		return ledger.Card{}, err
	}
	c, err := a.Lease(ctx, b, card, requestID, do)
	done(s, a, err)
	return c, err
}

func (Arbiter) Follow(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, lost func(error)) (func(), error) {
	a, err := dial(ctx, s)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancel(ctx)
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Follow(fctx, b, started); err != nil && fctx.Err() == nil {
			lost(err)
		}
	}()
	if err := <-started; err != nil {
		cancel()
		<-done
		a.Close()
		return nil, err
	}
	return func() { cancel(); <-done; a.Close() }, nil
}

func (Arbiter) ClaimReview(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, req ledger.ClaimRequest) (*ledger.Card, error) {
	a, err := conn(ctx, s)
	if err != nil {
		return nil, err
	}
	c, err := a.ClaimReview(ctx, b, req)
	done(s, a, err)
	return c, err
}
