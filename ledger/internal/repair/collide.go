package repair

import (
	"fmt"
	"strconv"

	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// renameCollisions gives a fresh id to each local card whose id upstream
// created too: two clones each created the id (bl create --id A4 on both,
// or a generated id drawn twice) before either synced. Upstream's card
// keeps the id, as whatever upstream accepted first stays first; the
// local one, whose create only this clone holds (local reports that of
// an event), becomes bl-<derived from its create's event id>, and every
// local event that names it (wire.Event.NamesCard: its own events, links,
// parents and dependencies from other local cards) is rewritten to the new
// id, keeping its event id. Without this the fold would refuse the local
// create as a duplicate and fold the local card's later events onto
// upstream's card: two cards' histories mixed. Two creates with one
// idempotency key are one request, not a collision (sameRequest).
//
// A card whose two creates this clone holds already (a plain git merge
// brought them together), or whose create this clone pushed before
// another create of its id arrived, is not renamed but named in twice:
// the fold gives its events to one card, and nothing tells whose they
// were (bl doctor lists such cards). It refuses (ErrIDCollision, nothing
// changed) when an event naming the local card is already on the remote
// (a claim pushed through a lease ref) or was ordered by a claim arbiter,
// which knows the card only by its id: renaming the rest would split the
// card's history between two ids.
//
// The fresh id is never one a card has anywhere: up and mine, and through
// shared (nil: none), the segments both sides hold, which the rebase does
// not otherwise decode. The id is derived from an event id a pushed work
// branch shows, so a teammate can create it first.
func renameCollisions(up, mine []*wire.Event, local func(*wire.Event) (bool, error), shared func(card string) (bool, error)) (out []store.Renamed, twice []string, err error) {
	upCreates := map[string][]*wire.Event{}
	for _, e := range up {
		if e.Op == wire.OpCreate {
			upCreates[e.Card] = append(upCreates[e.Card], e)
		}
	}
	if len(upCreates) == 0 {
		return nil, nil, nil // the common round: nothing new created upstream
	}
	// other is a create of e's card upstream holds that is not e.
	other := func(e *wire.Event) *wire.Event {
		for _, u := range upCreates[e.Card] {
			if u.ID != e.ID {
				return u
			}
		}
		return nil
	}
	var have, taken map[string]bool // built at the first create upstream shares
	seen := func() {
		if have != nil {
			return
		}
		have, taken = make(map[string]bool, len(mine)), map[string]bool{}
		for _, e := range mine {
			have[e.ID] = true
			if e.Op == wire.OpCreate {
				taken[e.Card] = true
			}
		}
		for card := range upCreates {
			taken[card] = true
		}
	}
	ids, mineCreate := map[string]string{}, map[string]*wire.Event{}
	for _, e := range mine {
		if e.Op != wire.OpCreate || ids[e.Card] != "" {
			continue
		}
		u := other(e)
		if u == nil || sameRequest(u, e) {
			continue
		}
		seen()
		if ok, err := local(e); err != nil {
			return nil, nil, err
		} else if !ok {
			if !have[u.ID] {
				// Ours is on the remote already, and a second create
				// of its id arrives (a plain git push, or a teammate
				// on purpose): the fold keeps the first by stamp.
				twice = append(twice, e.Card)
			}
			continue
		}
		if have[u.ID] {
			// Both creates are here already (a plain git merge): the
			// local fold has mixed the two cards since, and a rename
			// cannot tell whose later events are whose. Left as it is,
			// named (bl doctor lists both creates).
			twice = append(twice, e.Card)
			continue
		}
		to := wire.DerivedCardID(e.ID)
		for n := 1; ; n++ {
			if !taken[to] {
				if in, err := created(shared, to); err != nil {
					return nil, nil, err
				} else if !in {
					break
				}
			}
			to = wire.DerivedCardID(e.ID + "/" + strconv.Itoa(n))
		}
		taken[to] = true
		ids[e.Card], mineCreate[e.Card] = to, e
		out = append(out, store.Renamed{From: e.Card, To: to})
	}
	if len(ids) == 0 {
		return nil, twice, nil
	}
	for _, e := range mine {
		for from := range ids {
			if !e.NamesCard(from) {
				continue
			}
			if err := renamable(e, from, mineCreate[from], local); err != nil {
				return nil, nil, err
			}
		}
	}
	for i, e := range mine {
		renamed, changed := wire.RenameCards(e, ids)
		if !changed {
			continue
		}
		if ok, err := local(e); err != nil {
			return nil, nil, err
		} else if !ok {
			continue
		}
		mine[i] = renamed
		for j := range out {
			if e.NamesCard(out[j].From) {
				out[j].Events++
			}
		}
	}
	return out, twice, nil
}

// created asks shared, when there is one, whether a card id was created.
func created(shared func(string) (bool, error), card string) (bool, error) {
	if shared == nil {
		return false, nil
	}
	return shared(card)
}

// sameRequest reports whether two creates carry one idempotency key: one
// request made on two clones (bl import of one source, a retried script),
// so one card, which the fold keeps once (the second create is refused
// and its card's events are the first's). Not a collision.
func sameRequest(a, b *wire.Event) bool {
	return a.Fields != nil && b.Fields != nil && a.Fields.IdempotencyKey != "" && a.Fields.IdempotencyKey == b.Fields.IdempotencyKey
}

// renamable says why e, an event of this clone naming the local card
// from (created by c), stops the card's rename: it is on the remote
// already, or a claim arbiter ordered it.
func renamable(e *wire.Event, from string, c *wire.Event, local func(*wire.Event) (bool, error)) error {
	ok, err := local(e)
	if err != nil {
		return err
	}
	why := ""
	switch {
	case !ok:
		why = fmt.Sprintf("its %s event %s is on the remote already (a claim through the remote's lease ref names the card by its id)", e.Op, e.ID)
	case (e.Op == wire.OpClaim || e.Op == wire.OpClaimReview) && e.Card == from && e.ExpectVersion == 0:
		why = fmt.Sprintf("its %s event %s was decided by the claim arbiter, which knows the card by its id", e.Op, e.ID)
	default:
		return nil
	}
	return wire.Errorf(wire.ErrIDCollision, "card %s was also created upstream, and yours (created by %s, event %s) cannot take a new id: %s; bl sync changed nothing; bl doctor names the two creates", from, c.Actor, c.ID, why)
}
