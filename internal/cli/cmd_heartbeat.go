package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// HeartbeatCmd renews a lease.
type HeartbeatCmd struct {
	cardID       `embed:""`
	Owner        string         `help:"Lease owner (default: the actor)."`
	Epoch        int64          `help:"The epoch claim printed; a stale epoch is refused."`
	TTL          *time.Duration `name:"ttl" placeholder:"DURATION" help:"New lease length (default: keep the claim's)."`
	Progress     *int           `help:"Progress, 0-100."`
	Checkpoint   string         `placeholder:"JSON" help:"A small JSON document to resume from."`
	RequestID    string         `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
	remoteChoice `embed:""`
}

func (HeartbeatCmd) Help() string {
	return `Extends the lease by its TTL from now. Only the current owner at the current
epoch may heartbeat; anyone else gets exit code 4 and must stop working on
the card.

Through a git remote, a heartbeat within half a TTL of the lease's last
heartbeat is answered without a push: the remote's copy of the lease
still runs for half a TTL or more. Such a heartbeat is noted in the
clone's cache, and this clone's next push through the remote for another
card carries it, timed when it was made. The first heartbeat after a
claim, and one with --progress, --checkpoint or --ttl, always push.
Heartbeat every half TTL or less.

Examples:

    bl heartbeat --id A1 --owner worker-1 --epoch 3
    bl heartbeat --id A1 --owner worker-1 --epoch 3 --progress 60 --checkpoint '{"step":4}'` + exitCodesHelp
}

func (c *HeartbeatCmd) Run(a *App) error {
	id, err := c.id(a, "heartbeat")
	if err != nil {
		return err
	}
	ttl, err := optionalTTL(c.TTL)
	if err != nil {
		return err
	}
	var cp json.RawMessage
	if c.Checkpoint != "" {
		if !json.Valid([]byte(c.Checkpoint)) {
			return usagef(fmt.Sprintf("--checkpoint %q is not valid JSON", c.Checkpoint))
		}
		cp = json.RawMessage(c.Checkpoint)
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	if c.Progress == nil && cp == nil && c.TTL == nil && c.remoteChoice.check() == nil && remoteFor(b, c.remoteChoice) != "" {
		if as, err := a.arbiterSettings(c.remoteChoice); err == nil && as.URL == "" {
			if card, ok := coalescedHeartbeat(b, id, a.Owner(c.Owner), a.actor(), c.Epoch); ok {
				return a.emit(card, func(w io.Writer) {
					fmt.Fprintf(w, "renewed %s epoch %d %s (heartbeated less than half a TTL ago: not pushed again)\n", card.ID, card.ClaimEpoch, a.leaseLeft(card))
				})
			}
		}
	}
	req := ledger.HeartbeatRequest{Mutation: a.Mutation(c.RequestID), ID: id,
		Owner: a.Owner(c.Owner), Epoch: c.Epoch, TTL: ttl, Progress: c.Progress, Checkpoint: cp}
	card, err := a.ownerWrite(b, "heartbeat", id, c.remoteChoice, c.RequestID, func(ctx context.Context, rid string) (ledger.Card, error) {
		req.RequestID = rid
		return b.Heartbeat(ctx, req)
	})
	if err != nil {
		return a.noOwnerGiven(b, c.Owner, id, err)
	}
	return a.emit(card, func(w io.Writer) {
		fmt.Fprintf(w, "renewed %s epoch %d %s\n", card.ID, card.ClaimEpoch, a.leaseLeft(card))
	})
}

func (c *HeartbeatCmd) gitWork(a *App) string { return a.remoteWork("heartbeat", c.remoteChoice) }
