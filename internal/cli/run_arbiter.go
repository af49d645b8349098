package cli

import (
	"context"
	"time"

	"github.com/bl-backlog/bl/internal/supervisor"
	"github.com/bl-backlog/bl/ledger"
)

// bl run through a claim arbiter: its claims, heartbeats and outcomes are
// decided by the arbiter, over the one connection bl-git keeps for the
// run, and recorded in this clone as the owner commands are.

// gitWork hands bl run to bl-git when an arbiter is set and --local is
// not given: the arbiter's client lives there.
func (c *RunCmd) gitWork(a *App) string {
	if c.Local {
		return ""
	}
	if s, err := a.arbiterSettings(remoteChoice{}); err != nil || s.URL != "" {
		return arbiterWhat("run", s.URL) // bl-git reports a bad setting
	}
	return ""
}

// runLeases is what makes bl run's lease writes: the arbiter when one is
// set (unless local), else nil (the backlog itself).
func (a *App) runLeases(b *ledger.Backlog, local bool) (supervisor.Leases, error) {
	arb, s, err := a.throughArbiter("run", remoteChoice{Local: local})
	if err != nil || arb == nil {
		return nil, err
	}
	a.synced = true
	return arbiterLeases{b, arb, s}, nil
}

// arbiterLeases makes the supervisor's writes through the arbiter.
type arbiterLeases struct {
	b   *ledger.Backlog
	arb Arbiter
	s   ArbiterSettings
}

func (l arbiterLeases) Claim(ctx context.Context, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error) {
	if wait > 0 {
		return l.arb.ClaimWait(ctx, l.b, l.s, req, wait)
	}
	return l.arb.Claim(ctx, l.b, l.s, req)
}

func (l arbiterLeases) Heartbeat(ctx context.Context, req ledger.HeartbeatRequest) (ledger.Card, error) {
	return l.arb.Lease(ctx, l.b, l.s, req.ID, req.RequestID, func(ctx context.Context, rid string) (ledger.Card, error) {
		req.RequestID = rid
		return l.b.Heartbeat(ctx, req)
	})
}

func (l arbiterLeases) Write(ctx context.Context, req ledger.LeaseRequest, op func(context.Context, ledger.LeaseRequest) (ledger.Card, error)) (ledger.Card, error) {
	return l.arb.Lease(ctx, l.b, l.s, req.ID, req.RequestID, func(ctx context.Context, rid string) (ledger.Card, error) {
		req.RequestID = rid
		return op(ctx, req)
	})
}
