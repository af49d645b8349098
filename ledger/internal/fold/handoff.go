package fold

import (
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

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
