package main

import (
	"fmt"
	"io"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// ClaimCmd takes a lease.
type ClaimCmd struct {
	Owner     string        `help:"Lease owner (default: the actor)."`
	TTL       time.Duration `name:"ttl" default:"15m" placeholder:"DUR" help:"Lease length, a Go duration of at least 1s (90s, 10m)."`
	ID        string        `name:"id" help:"Claim this card or fail, instead of the best one."`
	Phase     string        `help:"Only cards in this phase."`
	Label     string        `help:"Only cards with this label."`
	RequestID string        `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry: a replay returns the card and appends nothing."`
}

func (ClaimCmd) Help() string {
	return `Claims the best claimable card (priority, then oldest, then id) and prints it
with its lease epoch. Keep the epoch: heartbeat, release and complete with
--epoch so that, if your lease expired and someone else took the card, you
are told to stop instead of clobbering their work. With nothing claimable
it prints "nothing claimable" (null with --json) and exits 0.

A card you already hold is claimable by you: claiming it again renews the
lease under a new epoch (attempts unchanged), which fences out any older
process of yours still holding the previous epoch.

Examples:

    bl claim --owner worker-1 --ttl 10m
    bl claim --owner worker-1 --phase M1 --json
    bl claim --owner worker-1 --id A4` + exitCodesHelp
}

func (c *ClaimCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	card, err := b.Claim(a.ctx, ledger.ClaimRequest{Mutation: a.Mutation(c.RequestID), Owner: a.Owner(c.Owner),
		TTL: c.TTL, ID: c.ID, Phase: c.Phase, Label: c.Label})
	if err != nil {
		return err
	}
	if card == nil {
		return a.emit(nil, func(w io.Writer) { fmt.Fprintln(w, "nothing claimable") })
	}
	return a.emit(card, func(w io.Writer) {
		fmt.Fprintf(w, "claimed %s epoch %d %s  %s\n", card.ID, card.ClaimEpoch, a.leaseLeft(*card), card.Title)
	})
}
