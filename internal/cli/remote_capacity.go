package cli

import (
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// A git host rations pushes (GitHub's guidance: about 6 a minute per
// repository), and every lease write through a git remote is one push, a
// completion one or two (docs/SYNC.md, "The git remote within what hosts allow").
// So a heartbeat through a remote pushes at most once per half TTL, and a
// team past the guidance is told to use a claim arbiter.

// coalescedHeartbeat answers a plain heartbeat through a git remote
// without writing or pushing when the lease was heartbeated less than
// half its TTL ago: the remote's copy of the lease
// then runs for at least half a TTL more, so another push would renew
// nothing anyone needs yet. A heartbeat that reports progress, sets a
// checkpoint or changes the TTL always goes. ok is false when the
// heartbeat must be written. An answered heartbeat is noted in the cache
// (ledger.NoteHeartbeat), timed now: this clone's next push through the
// remote, for any card, may carry it (gitsync, carried.go).
func coalescedHeartbeat(b *ledger.Backlog, id, owner, actor string, epoch int64) (card ledger.Card, ok bool) {
	var at time.Time
	defer func() {
		if ok {
			_ = b.NoteHeartbeat(ledger.NotedHeartbeat{Card: card.ID, Owner: card.ClaimOwner, Actor: actor, Epoch: card.ClaimEpoch, At: at})
		}
	}()
	_ = b.View(func(st *ledger.State, now time.Time) error {
		c, found := st.Card(id)
		if !found || c.Status != ledger.StatusClaimed || c.ClaimOwner != owner || (epoch != 0 && c.ClaimEpoch != epoch) || c.ClaimTTLSeconds <= 0 {
			return nil
		}
		// Only after a heartbeat: the first one after a claim always
		// goes, and finds a forced takeover (bl reclaim) at once.
		last := c.LastHeartbeatAt
		half := time.Duration(c.ClaimTTLSeconds) * time.Second / 2
		if last == nil || c.LeaseExpiresAt == nil || !now.Before(last.Add(half)) || now.Before(*last) {
			return nil
		}
		card, ok, at = c, true, now
		return nil
	})
	return card, ok
}

// pushGuidance is the pushes a minute a git host's guidance allows one
// repository (GitHub's: 6).
const pushGuidance = 6

// warnPushRate warns, after a write through the git remote, when the
// backlog's lease events of the last minute (every clone's, as this clone
// knows them) are past pushGuidance: the team's claims belong on a claim
// arbiter. The ledger does not say which of them went through the remote
// (some may be local, or an arbiter's), so the message counts events, not
// pushes.
func (a *App) warnPushRate(b *ledger.Backlog, remote string) {
	n := 0
	var newest time.Time
	_, _ = b.NewestHistory(ledger.HistoryFilter{}, 4*pushGuidance, func(e *ledger.Event, _ *ledger.Conflict) error {
		if newest.IsZero() {
			newest = e.At
		}
		if newest.Sub(e.At) <= time.Minute && leasePush(e.Op) {
			n++
		}
		return nil
	})
	if n > pushGuidance {
		a.Warn(fmt.Sprintf("%d lease events (claims, heartbeats, releases, completions) in this backlog's last minute; each one written through the git remote %s is a push, and git hosts allow a repository about %d pushes a minute (GitHub's guidance); a claim arbiter takes claims off git: --arbiter nats://HOST:PORT or BL_ARBITER (docs/SYNC.md)", n, remote, pushGuidance))
	}
}

// leasePush reports whether a lease write of op is a push through a git
// remote.
func leasePush(op ledger.Op) bool {
	switch op {
	case ledger.OpClaim, ledger.OpHeartbeat, ledger.OpRelease, ledger.OpComplete, ledger.OpBlock, ledger.OpFail:
		return true
	}
	return false
}
