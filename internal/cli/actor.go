package cli

import (
	"errors"
	"os"
	"os/user"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// Mutation stamps a write with the actor and an optional request id.
func (a *App) Mutation(requestID string) ledger.Mutation {
	a.mutated = true
	return ledger.Mutation{Actor: a.actor(), RequestID: requestID}
}

func (a *App) actor() string {
	if a.Actor != "" {
		return a.Actor
	}
	name := a.getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if host = strings.SplitN(host, ".", 2)[0]; host == "" {
		host = "localhost"
	}
	if name == "" {
		name = "unknown"
	}
	return name + "@" + host
}

// fencedOwner is the owner an optionally fenced call (complete, block)
// checks: --owner, or the actor when only --epoch was given, or nobody.
func (a *App) fencedOwner(owner string, epoch int64) string {
	if owner == "" && epoch != 0 {
		return a.actor()
	}
	return owner
}

// Owner is the lease owner for claim and friends: --owner, else the actor.
func (a *App) Owner(flag string) string {
	if flag != "" {
		return flag
	}
	return a.actor()
}

// noOwnerGiven explains a fenced heartbeat or release that ran without
// --owner: the actor stood in for the owner, and the card is someone
// else's (or nobody's), which is not "your lease is gone".
func (a *App) noOwnerGiven(b *ledger.Backlog, flag, id string, err error) error {
	if flag != "" || !errors.Is(err, ledger.ErrFenced) {
		return err
	}
	hint := "pass --owner (and --epoch) as claim printed them"
	c, gerr := b.Get(id)
	if gerr != nil || c.Status != ledger.StatusClaimed {
		return hinted{ledger.Errorf(ledger.ErrFenced, "no --owner given, and %s is not claimed by anyone (the actor %s stood in for the owner)", id, a.actor()), hint}
	}
	return hinted{ledger.Errorf(ledger.ErrFenced, "no --owner given, and the actor %s does not hold %s: it is held by %s at epoch %d (pass --owner %s --epoch %d if that is you)",
		a.actor(), id, c.ClaimOwner, c.ClaimEpoch, c.ClaimOwner, c.ClaimEpoch), hint}
}
