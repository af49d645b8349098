package ledger

import "github.com/bl-backlog/bl/ledger/internal/wire"

// A request id names one request. A repeat of it is a replay, answered
// with the first result and appending nothing, only when it is the same
// request:
//
//   - the same op;
//   - the same card, when the request names one (update, claim --id,
//     heartbeat, release, complete, block, unblock, reopen, link, unlink,
//     reclaim --id, create --id); a request that lets bl choose (claim
//     without --id, create without --id, reclaim of every expired lease)
//     is matched on its op alone;
//   - for a create, the same title, while the card is still as that create
//     left it (an edit since makes the first title unknowable, and the card
//     is then matched on op and id).
//
// Anything else reusing the id is refused with ErrConflict naming what the
// id was used for: answering it with the first request's card would report
// a request that never ran.

// replayOf reports whether m, a request for op, is a replay of the request
// that left receipt r, whose card now stands as c. It returns nil for a
// replay and the conflict to report otherwise.
func (m Mutation) replayOf(op Op, r Receipt, c Card) error {
	same := r.Op == op && (m.card == "" || m.card == r.Card)
	if same && op == OpCreate && m.title != nil && c.Version == r.Version && c.Title != *m.title {
		same = false
	}
	if same {
		return nil
	}
	return wire.Rule(ErrConflict, "request id %q was already used for %s of %s; a different request needs a new request id", m.RequestID, r.Op, r.Card)
}

// names records, on the mutation a request carries, what makes it that
// request: the card it names ("" when bl chooses) and, for a create, the
// title. The write path compares a replay against it (replayOf).
func (m Mutation) names(card string, title *string) Mutation {
	m.card, m.title = card, title
	return m
}
