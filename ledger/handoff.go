package ledger

import (
	"context"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// A handoff passes a lease from its holder to another owner in one event:
// the holder names itself and the epoch it holds (fenced like a heartbeat),
// and the card is then held by the new owner at the next epoch, with a
// fresh lease of the event's ttl (the lease's own when it carries none).
// Progress, checkpoint, notes and attempts stay: it is one attempt going
// on in other hands. Nobody can claim in between, and the old holder is
// fenced from then on like any holder of an older epoch.

// HandoffRequest passes the lease Owner holds at Epoch to To.
type HandoffRequest struct {
	Mutation
	ID    string
	Owner string
	Epoch int64
	To    string
	TTL   time.Duration // the new holder's lease; 0 keeps the lease's ttl
}

// Handoff passes a claimed card from its holder to another owner, who holds
// it at the next epoch. The old holder is fenced from then on.
func (b *Backlog) Handoff(ctx context.Context, r HandoffRequest) (Card, error) {
	var ttl int64
	if r.TTL != 0 {
		var err error
		if ttl, err = ttlSeconds(r.TTL, 0); err != nil {
			return Card{}, err
		}
	}
	return b.single(ctx, r.Mutation, &Event{Op: wire.OpHandoff, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, To: r.To, TTLSeconds: ttl})
}
