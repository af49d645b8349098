package cli

import (
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// HandoffCmd passes a claimed card to another owner.
type HandoffCmd struct {
	cardID    `embed:""`
	Owner     string         `help:"The lease owner handing the card on (default: the actor)."`
	Epoch     int64          `required:"" help:"The epoch the owner holds; a stale epoch is refused."`
	To        string         `required:"" placeholder:"OWNER" help:"The owner who takes the card over."`
	TTL       *time.Duration `name:"ttl" placeholder:"DURATION" help:"The new owner's lease (default: the lease's own length)."`
	RequestID string         `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (HandoffCmd) Help() string {
	return `One event: --to holds the card at the next epoch with a fresh lease;
progress, checkpoint and notes stay and the attempt is not counted again.
Nobody can claim it in between. The old owner is fenced from then on
(exit code 4 on its next heartbeat or complete), as is a handoff by an
owner whose lease was meanwhile taken by someone else.

Examples:

    bl handoff A1 --owner coder-1 --epoch 3 --to reviewer-1
    bl handoff A1 --owner coder-1 --epoch 3 --to reviewer-1 --ttl 30m` + exitCodesHelp
}

func (c *HandoffCmd) Run(a *App) error {
	id, err := c.id(a, "handoff")
	if err != nil {
		return err
	}
	ttl, err := optionalTTL(c.TTL)
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Handoff(a.ctx, ledger.HandoffRequest{Mutation: a.Mutation(c.RequestID), ID: id, Owner: a.Owner(c.Owner), Epoch: c.Epoch, To: c.To, TTL: ttl})
	if err != nil {
		return err
	}
	return a.emitCard(card, "handed off")
}
