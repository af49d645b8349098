package gitcli

import (
	"context"
	"time"

	"github.com/bl-backlog/bl/internal/arbiter"
	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/ledger"
)

// Arbiter implements cli.Arbiter with package arbiter: one connection per
// call (a command is one call).
type Arbiter struct{}

var _ cli.Arbiter = Arbiter{}

func dial(ctx context.Context, s cli.ArbiterSettings) (*arbiter.Arbiter, error) {
	return arbiter.Dial(ctx, arbiter.Settings{URL: s.URL, Creds: s.Creds, NKey: s.NKey, CA: s.CA, Cert: s.Cert, Key: s.Key})
}

func (Arbiter) Claim(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, req ledger.ClaimRequest) (*ledger.Card, error) {
	a, err := dial(ctx, s)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return a.Claim(ctx, b, req)
}

func (Arbiter) ClaimWait(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, req ledger.ClaimRequest, wait time.Duration) (*ledger.Card, error) {
	a, err := dial(ctx, s)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return a.ClaimWait(ctx, b, req, wait)
}

func (Arbiter) Lease(ctx context.Context, b *ledger.Backlog, s cli.ArbiterSettings, card, requestID string, do func(ctx context.Context, rid string) (ledger.Card, error)) (ledger.Card, error) {
	a, err := dial(ctx, s)
	if err != nil {
		return ledger.Card{}, err
	}
	defer a.Close()
	return a.Lease(ctx, b, card, requestID, do)
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
	a, err := dial(ctx, s)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return a.ClaimReview(ctx, b, req)
}
