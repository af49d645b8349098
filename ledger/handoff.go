package ledger

import (
	"context"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	"time"
)

// A handoff passes a lease from its holder to another owner in one event:
// the holder names itself and the epoch it holds (fenced like a heartbeat),
// and the card is then held by the new owner at the next epoch, with a
// fresh lease of the event's ttl (the lease's own when it carries none).
// Progress, checkpoint, notes and attempts stay: it is one attempt going
// on in other hands. Nobody can claim in between, and the old holder is
// fenced from then on like any holder of an older epoch.

func checkHandoff(_ *State, c *wire.Card, e *wire.Event) error {
	if e.Epoch == 0 {
		return wire.Rule(wire.ErrInvalid, "a handoff of %s needs the epoch its owner holds", c.ID)
	}
	if err := fence(c, e); err != nil {
		return err
	}
	switch {
	case e.To == "":
		return wire.Rule(wire.ErrInvalid, "a handoff of %s needs the owner it goes to", c.ID)
	case e.To == e.Owner:
		return wire.Rule(wire.ErrInvalid, "%s already holds %s", e.Owner, c.ID)
	case len(e.To) > wire.MaxAuthorLen:
		return wire.Rule(wire.ErrInvalid, "owner %q is longer than %d bytes", e.To, wire.MaxAuthorLen)
	case e.TTLSeconds < 0:
		return wire.Rule(wire.ErrInvalid, "ttl must be at least 1s")
	case e.TTLSeconds > wire.MaxTTLSeconds:
		return wire.Rule(wire.ErrInvalid, "a handoff of %s has a ttl of %ds; the longest lease is %s (MaxTTL)", c.ID, e.TTLSeconds, wire.MaxTTL)
	}
	return nil
}

func applyHandoff(_ *State, c *wire.Card, e *wire.Event) {
	now := e.WriterClock()
	if e.TTLSeconds > 0 {
		c.ClaimTTLSeconds = e.TTLSeconds
	}
	c.ClaimOwner = e.To
	c.ClaimEpoch = e.Epoch + 1
	c.ClaimedAt = wire.TimePtr(now)
	c.LeaseExpiresAt = wire.TimePtr(now.Add(time.Duration(c.ClaimTTLSeconds) * time.Second))
	c.LastHeartbeatAt = nil
}

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
func (b *Backlog) Handoff(ctx context.Context, r HandoffRequest) (wire.Card, error) {
	var ttl int64
	if r.TTL != 0 {
		var err error
		if ttl, err = ttlSeconds(r.TTL, 0); err != nil {
			return wire.Card{}, err
		}
	}
	return b.single(ctx, r.Mutation, &wire.Event{Op: wire.OpHandoff, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, To: r.To, TTLSeconds: ttl})
}
