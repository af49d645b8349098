package fold

import (
	"slices"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// SnapshotLines is what a snapshot of s holds: the header's counts and the
// newest event, the cards sorted by id, the receipts (pruned, see
// pruneReceipts) sorted by request id, and the conflicts in fold order.
// The cards are the state's own: the caller only encodes them.
func (s *State) SnapshotLines() (hdr wire.SnapshotHeader, cards []*wire.Card, receipts []wire.Keyed, conflicts []wire.Conflict, err error) {
	if err := s.readAll(); err != nil {
		return hdr, nil, nil, nil, err
	}
	s.pruneReceipts()
	hdr = wire.SnapshotHeader{V: wire.FormatVersion, Events: s.events, LastAt: s.last.At, LastID: s.last.ID,
		Cards: len(s.mem()), Receipts: len(s.requests), Conflicts: len(s.conflicts)}
	ids := make([]string, 0, len(s.mem()))
	for id := range s.mem() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	cards = make([]*wire.Card, len(ids))
	for i, id := range ids {
		cards[i] = s.mem()[id]
	}
	rids := make([]string, 0, len(s.requests))
	for r := range s.requests {
		rids = append(rids, r)
	}
	slices.Sort(rids)
	receipts = make([]wire.Keyed, len(rids))
	for i, r := range rids {
		receipts[i] = wire.Keyed{RequestID: r, Receipt: s.requests[r]}
	}
	return hdr, cards, receipts, s.conflicts, nil
}

// pruneReceipts forgets request ids older than ReceiptRetention before the
// newest event.
func (s *State) pruneReceipts() {
	s.All()
	cutoff := s.last.At.Add(-wire.ReceiptRetention)
	for r, rc := range s.requests {
		if rc.At.Before(cutoff) {
			delete(s.requests, r)
		}
	}
}
