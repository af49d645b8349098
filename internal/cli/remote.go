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

// remoteChoice is the owner commands' --remote and --local flags.
type remoteChoice struct {
	Remote string `placeholder:"NAME" help:"Go through this git remote (default: claims.remote in config.json): acknowledged once the push carrying it succeeds."`
	Local  bool   `help:"Write to this clone only, even when claims.remote names a remote: the remote has not acknowledged it, and a claim the remote already granted wins over it at the next exchange (docs/SYNC.md)."`
	// Arbiter: a claim arbiter (arbiter.go).
	Arbiter string `placeholder:"URL" help:"Go through this claim arbiter, nats://HOST:PORT (default: BL_ARBITER, else the local .backlog/arbiter.json): acknowledged once the arbiter took it (docs/SYNC.md)."`
}

// remote is the remote chosen: --remote, else (without --local) the
// default given, else none.
func (r remoteChoice) remote(def string) string {
	if r.Local {
		return ""
	}
	return firstOf(r.Remote, def)
}

// check refuses --local with --remote.
func (r remoteChoice) check() error {
	if r.Local && r.Remote != "" {
		return usagef("--local and --remote exclude each other: write locally, or through the remote")
	}
	if r.Arbiter != "" && (r.Local || r.Remote != "") {
		return usagef("--arbiter excludes --local and --remote: go through one of them")
	}
	return nil
}

// remoteFor is the remote an owner command goes through: --remote, else
// claims.remote in config.json unless --local, else none.
func remoteFor(b *ledger.Backlog, rc remoteChoice) string {
	return rc.remote(b.Config().Claims.Remote)
}

// tracked reports whether the remote chosen came from config.json rather
// than the command line.
func (r remoteChoice) tracked() bool { return r.Remote == "" }

// throughRemote returns the git side and the remote write the owner
// command cmd goes through, or a nil Git when it runs locally.
func (a *App) throughRemote(b *ledger.Backlog, cmd string, rc remoteChoice) (Git, RemoteWrite, error) {
	if err := rc.check(); err != nil {
		return nil, RemoteWrite{}, err
	}
	remote := remoteFor(b, rc)
	if remote == "" {
		return nil, RemoteWrite{}, nil
	}
	g, err := a.needGit(remoteWhat(cmd, remote))
	if err != nil {
		return nil, RemoteWrite{}, err
	}
	a.synced = true
	return g, a.remoteWrite(remote, rc.tracked()), nil
}

// ownerWrite runs do, the write of the owner command cmd (heartbeat,
// release, complete, block), locally or through the remote. do stamps its
// event with the request id it is given: the caller's, or on a remote one
// that tells a retried push's attempts apart, and writes with the context
// it is given.
func (a *App) ownerWrite(b *ledger.Backlog, cmd, id string, rc remoteChoice, requestID string, do func(ctx context.Context, requestID string) (ledger.Card, error)) (ledger.Card, error) {
	arb, s, err := a.throughArbiter(cmd, rc)
	if err != nil {
		return ledger.Card{}, err
	}
	if arb != nil {
		a.synced = true
		return arb.Lease(a.ctx, b, s, id, requestID, do)
	}
	g, remote, err := a.throughRemote(b, cmd, rc)
	if err != nil {
		return ledger.Card{}, err
	}
	if g == nil {
		return do(a.ctx, requestID)
	}
	card, err := g.Lease(a.ctx, b, remote, requestID, do)
	if err == nil {
		a.warnPushRate(b, remote.Remote)
	}
	return card, err
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
	remote    remoteChoice // --remote, --local
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
	id, err := w.card.id(a, w.cmd)
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
	card, err := a.ownerWrite(b, w.cmd, id, w.remote, w.requestID, func(ctx context.Context, rid string) (ledger.Card, error) {
		req.RequestID = rid
		return w.op(b, ctx, req)
	})
	if err != nil {
		if w.ownerIsActor {
			return a.noOwnerGiven(b, w.owner, id, err)
		}
		return err
	}
	return a.emitCard(card, w.verb)
}
