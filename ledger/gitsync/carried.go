package gitsync

import (
	"context"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// A heartbeat through a remote within half a TTL of the lease's last
// written one is answered without a push, and noted in this clone's cache
// (ledger.NoteHeartbeat). When this clone next pushes a lease write
// through the remote, for any card, the same push carries the noted
// heartbeats of its other leases that would soon need a push of their
// own: one git-receive-pack instead of several.
//
// A carried heartbeat is timed when its agent made it (HeartbeatRequest.At),
// so the lease it renews runs from then, never from the push: carrying
// adds no liveness the agent did not show. A card whose agent made no
// heartbeat since the last written one gets nothing, however many pushes
// its neighbours make.

// carryAfter: a noted heartbeat is carried once the card's last written
// heartbeat is at least TTL/carryAfter old; a younger one is left for a
// later push.
const carryAfter = 3

// carryMost bounds the heartbeats one push carries.
const carryMost = 32

// stageCarried stages the noted heartbeats the push of w carries (see
// carryAfter): each on a card w is not about, claimed through the remote
// by the heartbeat's owner at its epoch, whose lease ref's newest line is
// that owner's, heartbeated after the last written heartbeat, and whose
// lease still runs, so that it renews and never revives one.
func (s *Syncer) stageCarried(ctx context.Context, w *ledger.Staged) []*ledger.Staged {
	noted := s.b.NotedHeartbeats()
	if len(noted) == 0 {
		return nil
	}
	var pick []ledger.NotedHeartbeat
	_ = s.b.View(func(st *ledger.State, now time.Time) error {
		for _, h := range noted {
			// A lease ref near leaseLinesCarried is left to its card's
			// own push, which carries its lines to the branch.
			if h.Card == w.Events[0].Card || s.lv.tips[h.Card].IsZero() || s.lv.bad[h.Card] || len(pick) == carryMost ||
				len(s.lv.lines[h.Card]) >= leaseLinesCarried-1 {
				continue
			}
			c, ok := st.Card(h.Card)
			if !ok || c.Status != ledger.StatusClaimed || c.ClaimOwner != h.Owner || c.ClaimEpoch != h.Epoch {
				s.b.ForgetHeartbeat(h) // that lease is over
				continue
			}
			if c.ClaimTTLSeconds <= 0 || c.LastHeartbeatAt == nil || c.LeaseExpiresAt == nil {
				continue
			}
			ttl := time.Duration(c.ClaimTTLSeconds) * time.Second
			last := *c.LastHeartbeatAt
			if !h.At.After(last) || h.At.After(now) || now.Sub(last) < ttl/carryAfter || !now.Before(*c.LeaseExpiresAt) {
				continue
			}
			if !newestIs(s.lv.lines[h.Card], h) {
				continue
			}
			pick = append(pick, h)
		}
		return nil
	})
	var out []*ledger.Staged
	for _, h := range pick {
		actor := h.Actor
		if actor == "" {
			actor = h.Owner
		}
		x, err := s.b.Stage(ctx, s.checkLease, func(ctx context.Context) error {
			_, err := s.b.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: actor}, ID: h.Card, Owner: h.Owner, Epoch: h.Epoch, At: h.At})
			return err
		})
		if err == nil && x != nil {
			out = append(out, x)
		}
	}
	return out
}

// newestIs reports whether the newest of a lease ref's lines is a claim
// or heartbeat of h's owner at h's epoch made before h: the remote holds
// no later lease write on the card that this clone's fold might lack.
func newestIs(lines [][]byte, h ledger.NotedHeartbeat) bool {
	var newest *ledger.Event
	for _, l := range lines {
		e, err := ledger.DecodeLine(l)
		if err != nil {
			return false
		}
		if newest == nil || e.At.After(newest.At) || (e.At.Equal(newest.At) && e.ID > newest.ID) {
			newest = e
		}
	}
	return newest != nil && slices.Contains([]ledger.Op{ledger.OpClaim, ledger.OpHeartbeat}, newest.Op) &&
		newest.Owner == h.Owner && newest.Epoch == h.Epoch && newest.WriterClock().Before(h.At)
}

// appendCarried appends the carried heartbeats the remote took. One that
// cannot be appended here now (this backlog moved meanwhile) stands on
// its lease ref all the same, and the next pull takes it in.
func (s *Syncer) appendCarried(ctx context.Context, landed []*ledger.Staged) {
	for _, x := range landed {
		_, _ = s.b.AppendStaged(ctx, x)
	}
}
