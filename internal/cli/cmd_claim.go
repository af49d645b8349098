package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/watch"
)

// ClaimCmd takes a lease.
type ClaimCmd struct {
	Owner        string        `help:"Lease owner (default: the actor)."`
	TTL          time.Duration `name:"ttl" default:"15m" placeholder:"DURATION" help:"Lease length, a Go duration from 1s to 50 years (90s, 10m)."`
	cardFilter   `embed:""`
	Phase        string        `help:"Only cards in this phase."`
	Label        string        `help:"Only cards with this label."`
	Any          bool          `help:"Also cards assigned to someone else (bl assign), which a plain claim passes over."`
	Mine         bool          `help:"Only cards assigned to the owner."`
	Wait         time.Duration `placeholder:"DURATION" help:"When nothing is claimable, wait up to this long for a card to become claimable, then claim it."`
	RequestID    string        `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry: a replay returns the card and appends nothing."`
	Review       bool          `help:"Claim the best card waiting for review (one you did not send to review), with a lease: then bl approve or bl reject with --owner and --epoch."`
	remoteChoice `embed:""`
}

func (ClaimCmd) Help() string {
	return `Claims the best claimable card (priority, then oldest, then id) and prints it
with its lease epoch. Keep the epoch: heartbeat, release and complete with
--epoch so that, if your lease expired and someone else took the card, you
are told to stop instead of clobbering their work. With nothing claimable
it prints "nothing claimable" (null with --json) and exits 0.

With --wait, claim blocks until a card becomes claimable — created,
unblocked, reopened, a dependency completed, a lease expired, a deferral
passed — and claims it; it wakes on file changes and on the next lease
expiry or deferral, never by polling. Of many waiters, one wins each card
and the rest keep waiting. It prints null if the wait runs out. SIGINT or
SIGTERM ends the wait quietly: nothing claimed, null printed (as when the
wait runs out) and exit 0, unless the claim had already been made, which is
then printed.

A card assigned to someone else (bl assign) is passed over unless --any
is given; the cards assigned to the owner and the unassigned ones are
taken in claim order, and --mine takes only the owner's. Naming the card
(bl claim A4) takes it whoever it is assigned to.

Without --id, claim never returns a card under a live lease, yours
included. claim --id of a card you already hold renews the lease under a
new epoch (attempts unchanged), which fences out any older process of
yours still holding the previous epoch.

Examples:

    bl claim --owner worker-1 --ttl 10m
    bl claim --owner worker-1 --phase M1 --json
    bl claim --owner worker-1 --id A4
    bl claim --owner bob --mine
    bl claim --owner worker-1 --wait 10m --json
    bl claim --owner worker-1 --remote origin --json
    bl claim --review --owner reviewer-1 --json

With --review the claim takes a card in review instead, under a review
lease (heartbeat and release work on it as on a claim), so two reviewers
never review one card; the card stays in review until bl approve or
bl reject.

A card whose paths (bl create --paths) overlap the paths of a card claimed
under a live lease, or in review, is passed over; claim --id of such a card
is refused (exit 4, code paths_held) naming the card that holds them.

With --remote (or claims.remote in config.json) the claim goes through a
git remote shared by several machines: fetch, claim the best card, push
the claim to the card's lease ref (refs/bl/leases/<ns>/<card>), then commit and
push the branch. The card is printed only once the lease push landed. If
another clone claimed the same card first, nothing is written and bl picks
again, among the best cards. See docs/SYNC.md.

With --arbiter nats://HOST:PORT (or BL_ARBITER, or the local
.backlog/arbiter.json) a NATS JetStream server decides the claim instead:
a compare-and-swap on the card's key, then the claim is written here. With
--wait the arbiter's decisions on other machines wake the wait. An arbiter
that cannot be reached exits 7 and writes nothing.` + exitCodesHelp
}

func (c *ClaimCmd) Run(a *App) error {
	id, err := c.id(a, "claim")
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	if err := checkTTL(c.TTL); err != nil {
		return err
	}
	if c.Wait < 0 {
		return usagef(fmt.Sprintf("--wait %s is negative", c.Wait))
	}
	req := ledger.ClaimRequest{Mutation: a.Mutation(c.RequestID), Owner: a.Owner(c.Owner),
		TTL: c.TTL, ID: id, Phase: c.Phase, Label: c.Label, AnyAssignee: c.Any, Mine: c.Mine}
	if c.Any && c.Mine {
		return usagef("--any and --mine do not combine: pick one")
	}
	arb, as, err := a.throughArbiter("claim", c.remoteChoice)
	if err != nil {
		return err
	}
	if c.Review {
		return c.claimReview(a, b, arb, as, req)
	}
	if c.Wait > 0 && arb == nil && remoteFor(b, c.remoteChoice) != "" {
		return usagef("--wait does not combine with a remote claim")
	}
	card, err := c.claim(a, b, arb, as, req)
	if err != nil {
		return err
	}
	if card == nil {
		return a.emit(nil, func(w io.Writer) { fmt.Fprintln(w, "nothing claimable") })
	}
	return a.emit(card, func(w io.Writer) {
		fmt.Fprintf(w, "claimed %s epoch %d %s  %s\n", card.ID, card.ClaimEpoch, a.leaseLeft(*card), text(card.Title))
	})
}

func (c *ClaimCmd) gitWork(a *App) string {
	w := a.remoteWork("claim", c.remoteChoice)
	// A wait ends at the caller's signal: bl-git's own.
	a.relayable = a.relayable && c.Wait == 0
	return w
}

// interrupted reports whether err is the end of the run's context, that
// is SIGINT or SIGTERM.
func (a *App) interrupted(err error) bool {
	return errors.Is(err, context.Canceled) && a.ctx.Err() != nil
}

// checkTTL refuses a lease shorter than a second: it would end before the
// first heartbeat could reach it.
func checkTTL(ttl time.Duration) error {
	if ttl < time.Second {
		return usagef(fmt.Sprintf("--ttl %s is shorter than 1s", ttl))
	}
	return nil
}

// optionalTTL is an optional --ttl: 0 (keep the lease's own) when not given.
func optionalTTL(ttl *time.Duration) (time.Duration, error) {
	if ttl == nil {
		return 0, nil
	}
	return *ttl, checkTTL(*ttl)
}

// ownReviews says why a review claim found nothing when the cards in
// review were all sent by this actor or owner: nobody reviews their own.
func (a *App) ownReviews(b *ledger.Backlog, req ledger.ClaimRequest) string {
	cards, err := b.List(ledger.Filter{Status: []ledger.Status{ledger.StatusReview}}, ledger.SortClaim)
	if err != nil || len(cards) == 0 {
		return ""
	}
	own := 0
	for _, c := range cards {
		if c.SubmittedActor == req.Actor || c.SubmittedBy == req.Owner || c.SubmittedBy == req.Actor {
			own++
		}
	}
	if own == 0 {
		return ""
	}
	return fmt.Sprintf(" you did not send (%d in review were sent by you, %s; a reviewer works under a name of its own: --actor or BL_ACTOR)", own, nameText(req.Actor))
}

// claim takes the card through whoever decides claims here: the arbiter,
// the git remote, or the local ledger (waiting with --wait). A wait
// stopped by SIGINT or SIGTERM before any claim was made ends as a wait
// that ran out does: nil, no error.
func (c *ClaimCmd) claim(a *App, b *ledger.Backlog, arb Arbiter, as ArbiterSettings, req ledger.ClaimRequest) (*ledger.Card, error) {
	if arb != nil {
		a.synced = true
		if c.Wait == 0 {
			return arb.Claim(a.ctx, b, as, req)
		}
		card, err := arb.ClaimWait(a.ctx, b, as, req, c.Wait)
		if err != nil && a.interrupted(err) {
			return nil, nil
		}
		return card, err
	}
	g, remote, err := a.throughRemote(b, "claim", c.remoteChoice)
	switch {
	case err != nil:
		return nil, err
	case g != nil:
		card, err := g.Claim(a.ctx, b, remote, req)
		if err == nil {
			a.warnPushRate(b, remote.Remote)
		}
		return card, err
	case c.Wait > 0:
		card, err := watch.Claim(a.ctx, b, req, c.Wait)
		if err != nil && a.interrupted(err) {
			return nil, nil
		}
		return card, err
	}
	return b.Claim(a.ctx, req)
}

// claimReview is claim --review: the best card waiting for review, under
// a review lease, decided by the arbiter when there is one.
func (c *ClaimCmd) claimReview(a *App, b *ledger.Backlog, arb Arbiter, as ArbiterSettings, req ledger.ClaimRequest) error {
	if c.Wait > 0 || (arb == nil && remoteFor(b, c.remoteChoice) != "") {
		return usagef("--review does not combine with --wait or a remote claim")
	}
	var card *ledger.Card
	var err error
	if arb != nil {
		a.synced = true
		card, err = arb.ClaimReview(a.ctx, b, as, req)
	} else {
		card, err = b.ClaimReview(a.ctx, req)
	}
	if err != nil {
		return err
	}
	if card == nil {
		return a.emit(nil, func(w io.Writer) { fmt.Fprintln(w, "nothing to review"+a.ownReviews(b, req)) })
	}
	return a.emit(card, func(w io.Writer) {
		fmt.Fprintf(w, "claimed %s for review epoch %d %s  %s\n", card.ID, card.ClaimEpoch, a.leaseLeft(*card), text(card.Title))
	})
}
