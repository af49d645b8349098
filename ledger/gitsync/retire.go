package gitsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/bl-backlog/bl/ledger"
)

// Lease refs of done cards are retired (deleted), so the remote holds
// about one lease ref per card leased now rather than one per card ever
// leased. A deleted ref could be created again by a claimer whose fetch
// is older than the deletion: its compare-and-swap expects "no ref" and
// lands, on a card that is done (or leased again) since. The fold refuses
// such a claim everywhere (its version and epoch are the card's before the
// retired lease), but the claimer must not be told it won. So a retirement
// first moves the namespace's retirement ref, RetiredRefPrefix<ns>, and
// only then deletes; and a lease write that created its card's ref is
// acknowledged only if that retirement ref is still where the write's
// fetch saw it. If it moved, the write's round starts again, and the next
// fetch folds it as every clone does.

// RetiredRefPrefix starts the name of a namespace's retirement ref:
// refs/bl/retired/<namespace>, a commit with the empty tree naming the
// cards whose lease refs it retired. One ref per backlog, whatever the
// number of cards retired.
const RetiredRefPrefix = "refs/bl/retired/"

// retireBatch is how many lease refs of done cards wait before a carry
// retires them: one retirement costs two pushes, shared by the batch.
var retireBatch = 16

// retireMax bounds the lease refs one retirement deletes.
const retireMax = 1000

// retiredRef is this backlog's retirement ref.
func (s *Syncer) retiredRef() plumbing.ReferenceName {
	ns := strings.TrimSuffix(strings.TrimPrefix(s.leasePrefix, LeaseRefPrefix), "/")
	return plumbing.ReferenceName(RetiredRefPrefix + ns)
}

// retirable lists the cards whose lease refs may go: done in this clone's
// backlog, which the branch now holds, with every line of their tip in it.
// settled: the caller vouches for nothing, and only cards whose tip's
// every line the fetched branch held count.
func (s *Syncer) retirable(settled bool) []string {
	var cards []string
	_ = s.b.View(func(st *ledger.State, _ time.Time) error {
		for _, card := range sortedCards(s.lv.tips) {
			if s.lv.bad[card] {
				continue
			}
			if settled && slices.ContainsFunc(s.lv.lines[card], func(l []byte) bool { return !s.lv.inBranch[lineID(l)] }) {
				continue
			}
			if c, ok := st.Card(card); ok && c.Status == ledger.StatusDone {
				cards = append(cards, card)
			}
			if len(cards) == retireMax {
				break
			}
		}
		return nil
	})
	return cards
}

// retire deletes the lease refs of done cards once retireBatch of them
// wait; the caller has just left the branch holding everything this clone
// holds, the lease lines of those refs included, or (settled) the refs
// are only those whose lines the fetched branch held. Each delete expects
// the tip this clone folded, so a lease write that landed meanwhile keeps
// its ref. A failure costs nothing: the refs stay until the next
// retirement.
func (s *Syncer) retire(ctx context.Context, settled bool) {
	cards := s.retirable(settled)
	if len(cards) < retireBatch {
		return
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "bl retired %d lease refs\n\nafter %s\n", len(cards), s.lv.retired)
	for _, card := range cards {
		fmt.Fprintf(&msg, "%s %s\n", card, s.lv.tips[card])
	}
	mark, err := s.storeLeaseCommit(msg.String(), plumbing.ZeroHash)
	if err != nil {
		return
	}
	name, old := s.retiredRef(), s.lv.retired
	if s.noAtomic || old.IsZero() {
		return // no claimer could guard a creation against this retirement
	}
	s.atomicPush = true // only where claimers' guards work
	err = s.receivePack(ctx, func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error) {
		if refTip(refs, name) != old {
			return nil, nil, errLeaseMoved
		}
		return []*packp.Command{{Name: name, Old: old, New: mark}}, []plumbing.Hash{mark, emptyTree}, nil
	})
	s.atomicPush = false
	if err != nil {
		return
	}
	s.lv.retired = mark
	if s.receivePack(ctx, func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error) {
		var cmds []*packp.Command
		for _, card := range cards {
			ref, tip := s.leaseRef(card), s.lv.tips[card]
			if refTip(refs, ref) == tip {
				cmds = append(cmds, &packp.Command{Name: ref, Old: tip, New: plumbing.ZeroHash})
			}
		}
		return cmds, nil, nil
	}) == nil {
		for _, card := range cards {
			delete(s.lv.tips, card)
		}
	}
}

// refTip is the hash refs advertise for name, zero when absent.
func refTip(refs storer.ReferenceStorer, name plumbing.ReferenceName) plumbing.Hash {
	if refs == nil {
		return plumbing.ZeroHash
	}
	if r, err := refs.Reference(name); err == nil {
		return r.Hash()
	}
	return plumbing.ZeroHash
}

// errNoAtomic: the remote does not apply several ref updates as one.
var errNoAtomic = errors.New("the remote does not support atomic pushes")

// guardCreate adds to the push creating a lease ref the retirement ref,
// expected where the fetch saw it and left there, in one atomic push: a
// retirement since the fetch fails the whole push, which then writes
// nothing. When there was no retirement ref yet, this push makes it, so
// that the next retirement has one to move. A remote without atomic
// pushes gets the lease ref alone, and then never retires.
func (s *Syncer) guardCreate(cmds []*packp.Command, objs []plumbing.Hash) ([]*packp.Command, []plumbing.Hash, error) {
	if s.noAtomic {
		return cmds, objs, nil
	}
	s.atomicPush = true
	mark, next := s.lv.retired, s.lv.retired
	if mark.IsZero() {
		var err error
		if next, err = s.storeLeaseCommit("bl retired 0 lease refs\n", plumbing.ZeroHash); err != nil {
			return nil, nil, err
		}
		objs = append(objs, next)
	}
	return append(cmds, &packp.Command{Name: s.retiredRef(), Old: mark, New: next}), objs, nil
}

// retiredMark is the first retirement ref of the namespace, for a branch
// push to make when the remote has none: then the first claims of cards,
// which create lease refs, only check it and never contend to make it
// (guardCreate). Zero when the remote has one, or cannot push atomically.
func (s *Syncer) retiredMark(refs storer.ReferenceStorer) plumbing.Hash {
	if s.noAtomic || !refTip(refs, s.retiredRef()).IsZero() {
		return plumbing.ZeroHash
	}
	mark, err := s.storeLeaseCommit("bl retired 0 lease refs\n", plumbing.ZeroHash)
	if err != nil {
		return plumbing.ZeroHash
	}
	return mark
}
