package cli

import (
	"context"

	"github.com/bl-backlog/bl/ledger"
)

// The owner commands (claim, heartbeat, release, complete, block) run
// locally, or through a git remote shared by several machines when one is
// named by --remote or by claims.remote in config.json: then the write is
// acknowledged only once the push carrying it succeeded (see bl sync). In
// the lean bl that work is handed to bl-git (gitWork, before anything is
// read).

// remoteFor is the remote an owner command goes through: the flag, else
// claims.remote in config.json, else none.
func remoteFor(b *ledger.Backlog, flag string) string {
	return firstOf(flag, b.Config().Claims.Remote)
}

// throughRemote returns the git side and the remote the owner command cmd
// goes through, or a nil Git when it runs locally.
func (a *App) throughRemote(b *ledger.Backlog, cmd, flag string) (Git, string, error) {
	remote := remoteFor(b, flag)
	if remote == "" {
		return nil, "", nil
	}
	g, err := a.needGit(remoteWhat(cmd, remote))
	if err != nil {
		return nil, "", err
	}
	a.synced = true
	return g, remote, nil
}

// ownerWrite runs do, the write of the owner command cmd (heartbeat,
// release, complete, block), locally or through the remote. do stamps its
// event with the request id it is given: the caller's, or on a remote one
// that tells a retried push's attempts apart.
func (a *App) ownerWrite(b *ledger.Backlog, cmd, remoteFlag, requestID string, do func(requestID string) (ledger.Card, error)) (ledger.Card, error) {
	g, remote, err := a.throughRemote(b, cmd, remoteFlag)
	if err != nil {
		return ledger.Card{}, err
	}
	if g == nil {
		return do(requestID)
	}
	return g.Lease(a, b, remote, requestID, do)
}

// leaseWrite is a release, complete or block as its command was given:
// one lease write (op) on one card, fenced on owner and epoch.
type leaseWrite struct {
	cmd, verb string // "complete", and "completed" for the output
	card      cardID
	owner     string // --owner
	epoch     int64  // --epoch
	reason    string // the release reason, completion note or block reason
	requestID string
	remote    string // --remote
	// ownerIsActor: without --owner the actor is the owner, and the call
	// is always fenced (release, as heartbeat). Otherwise the call is
	// fenced only when --owner or --epoch is given (complete and block:
	// a person may close or park a card by hand).
	ownerIsActor bool
	op           func(*ledger.Backlog, context.Context, ledger.LeaseRequest) (ledger.Card, error)
	// before, when set, runs once the backlog is open, before anything is
	// written (complete's pre-complete validators).
	before func(b *ledger.Backlog, id, owner string) error
}

// runLease runs w locally or through the remote and prints the card.
func (a *App) runLease(w leaseWrite) error {
	id, err := w.card.id(w.cmd)
	if err != nil {
		return err
	}
	owner := a.fencedOwner(w.owner, w.epoch)
	if w.ownerIsActor {
		owner = a.Owner(w.owner)
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	if w.before != nil {
		if err := w.before(b, id, owner); err != nil {
			return err
		}
	}
	req := ledger.LeaseRequest{Mutation: a.Mutation(w.requestID), ID: id, Owner: owner, Epoch: w.epoch, Reason: w.reason}
	card, err := a.ownerWrite(b, w.cmd, w.remote, w.requestID, func(rid string) (ledger.Card, error) {
		req.RequestID = rid
		return w.op(b, a.ctx, req)
	})
	if err != nil {
		if w.ownerIsActor {
			return a.noOwnerGiven(b, w.owner, id, err)
		}
		return err
	}
	return a.emitCard(card, w.verb)
}
