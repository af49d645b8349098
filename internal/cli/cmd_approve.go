package cli

import (
	"context"

	"github.com/bl-backlog/bl/ledger"
)

// ApproveCmd passes a card's review: it is done.
type ApproveCmd struct {
	cardID    `embed:""`
	Owner     string `help:"The reviewer holding the review lease (bl claim --review); the call is then fenced like heartbeat."`
	Epoch     int64  `help:"The epoch the review was taken at (or the card's epoch as you looked at it): a card that moved on since is refused."`
	Note      string `help:"A closing note."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (ApproveCmd) Help() string {
	return `The card must be in review (bl complete --review). Whoever sent it to
review, by its actor (--actor, BL_ACTOR) or its owner, cannot approve or
reject it unless config.json sets review.allow_self: true (exit 4, code
self_review; not fenced: the work stands). Run reviews as another actor.
A reviewer who took the review with
bl claim --review passes --owner and --epoch; while that review lease is
live nobody else may decide the card. A card that moved on since you looked
(rejected, claimed, sent to review again) is refused: pass --epoch to be
sure it is the review you read.

Examples:

    bl approve A3
    bl approve A3 --owner reviewer-1 --epoch 4 --note "merged bl/A3"` + exitCodesHelp
}

func (c *ApproveCmd) Run(a *App) error {
	return a.runVerdict(c.cardID, "approve", "approved", ledger.ReviewRequest{Owner: c.Owner, Epoch: c.Epoch, Reason: c.Note}, c.RequestID)
}

// RejectCmd fails a card's review: it is ready again, with the reason.
type RejectCmd struct {
	cardID    `embed:""`
	Reason    string `required:"" help:"Why the work is not accepted; kept on the card for the next worker (required)."`
	Owner     string `help:"The reviewer holding the review lease (bl claim --review)."`
	Epoch     int64  `help:"The epoch the review was taken at; a card that moved on since is refused."`
	RequestID string `name:"request-id" placeholder:"ID" help:"Makes the call safe to retry."`
}

func (RejectCmd) Help() string {
	return `The card goes back to ready with the reason on it (reject_reason in
--json, shown by bl show, the boards and BL_CARD_JSON). Its attempts are
kept, and so are its branch and commit: the next worker goes on from them.

Examples:

    bl reject A3 --reason "the lexer test fails on CRLF input"` + exitCodesHelp
}

func (c *RejectCmd) Run(a *App) error {
	if c.Reason == "" {
		return usagef("--reason is empty: say why the work is not accepted")
	}
	return a.runVerdict(c.cardID, "reject", "rejected", ledger.ReviewRequest{Owner: c.Owner, Epoch: c.Epoch, Reason: c.Reason}, c.RequestID)
}

func (a *App) runVerdict(card cardID, cmd, verb string, r ledger.ReviewRequest, requestID string) error {
	id, err := card.id(a, cmd)
	if err != nil {
		return err
	}
	if r.Epoch < 0 {
		return usagef("--epoch cannot be negative")
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	r.Mutation, r.ID = a.Mutation(requestID), id
	verdict := func(ctx context.Context, rid string) (ledger.Card, error) {
		r.RequestID = rid
		if cmd == "approve" {
			return b.Approve(ctx, r)
		}
		return b.Reject(ctx, r)
	}
	var c ledger.Card
	arb, as, err := a.throughArbiter(cmd, remoteChoice{})
	if err != nil {
		return err
	}
	if arb != nil {
		// Through the claim arbiter, as the review lease was taken.
		a.synced = true
		c, err = arb.Lease(a.ctx, b, as, id, requestID, verdict)
	} else {
		c, err = verdict(a.ctx, requestID)
	}
	if err != nil {
		return err
	}
	return a.emitCard(c, verb)
}

func (c *ApproveCmd) gitWork(a *App) string { return a.arbiterWork("approve") }

func (c *RejectCmd) gitWork(a *App) string { return a.arbiterWork("reject") }
