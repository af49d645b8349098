package fold

import (
	"slices"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// snapshotLines is what a snapshot of s holds: the header's counts and the
// newest event, the cards sorted by id, the receipts (pruned, see
// pruneReceipts) sorted by request id, and the conflicts in fold order.
// The cards are the state's own: the caller only encodes them.
func (s *State) SnapshotLines() (hdr wire.SnapshotHeader, cards []*wire.Card, receipts []wire.Keyed, conflicts []wire.Conflict, err error) {
	if err := s.readAll(); err != nil {
		return hdr, nil, nil, nil, err
	}
	s.pruneReceipts()
	hdr = wire.SnapshotHeader{V: wire.FormatVersion, Events: s.EventCount, LastAt: s.LastEvent.At, LastID: s.LastEvent.ID,
		Cards: len(s.CardsByID), Receipts: len(s.Requests), Conflicts: len(s.ConflictLog)}
	ids := make([]string, 0, len(s.CardsByID))
	for id := range s.CardsByID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	cards = make([]*wire.Card, len(ids))
	for i, id := range ids {
		cards[i] = s.CardsByID[id]
	}
	rids := make([]string, 0, len(s.Requests))
	for r := range s.Requests {
		rids = append(rids, r)
	}
	slices.Sort(rids)
	receipts = make([]wire.Keyed, len(rids))
	for i, r := range rids {
		receipts[i] = wire.Keyed{RequestID: r, Receipt: s.Requests[r]}
	}
	return hdr, cards, receipts, s.ConflictLog, nil
}

// pruneReceipts forgets request ids older than ReceiptRetention before the
// newest event.
func (s *State) pruneReceipts() {
	s.All()
	cutoff := s.LastEvent.At.Add(-wire.ReceiptRetention)
	for r, rc := range s.Requests {
		if rc.At.Before(cutoff) {
			delete(s.Requests, r)
		}
	}
}
