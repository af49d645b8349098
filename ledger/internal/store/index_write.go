package store

// Building and writing the snapshot index (see "Snapshot index" in
// doc.go); index.go reads it.

import (
	"cmp"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// indexEntry is one key and where its line lies in the snapshot.
type indexEntry struct {
	key       string
	off       int64
	n         int
	candidate bool // cards only: ready, claimed or in review when the snapshot was taken
	card      *wire.Card
}

// IndexBuild collects the entries of a snapshot as it is written or read.
type IndexBuild struct {
	cards, keys, receipts []indexEntry
	refs                  []indexEntry // by the id a card names (parent, link), to the naming card's line
	conflicts             int64        // offset of the first conflict line; the file size when none
}

func (ib *IndexBuild) addCard(c *wire.Card, off int64, n int) {
	ib.cards = append(ib.cards, indexEntry{key: c.ID, off: off, n: n, card: c,
		candidate: c.Status == wire.StatusReady || c.Status == wire.StatusClaimed || c.Status == wire.StatusReview})
	if c.IdempotencyKey != "" {
		ib.keys = append(ib.keys, indexEntry{key: c.IdempotencyKey, off: off, n: n})
	}
	for _, to := range namedBy(c) {
		ib.refs = append(ib.refs, indexEntry{key: to, off: off, n: n})
	}
}

// namedBy is every card c names, once each: its parent and the other end
// of its links and dependencies.
func namedBy(c *wire.Card) []string {
	var to []string
	if c.Parent != "" {
		to = append(to, c.Parent)
	}
	for _, l := range c.AllLinks() {
		if !slices.Contains(to, l.To) {
			to = append(to, l.To)
		}
	}
	return to
}

// encode renders the index for the snapshot identified by id.
func (ib *IndexBuild) encode(id snapshotID) []byte {
	for _, t := range [][]indexEntry{ib.cards, ib.keys, ib.receipts, ib.refs} {
		slices.SortFunc(t, func(a, b indexEntry) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.off, b.off)) })
	}
	var order []uint32
	for i, e := range ib.cards {
		if e.candidate {
			order = append(order, uint32(i))
		}
	}
	slices.SortFunc(order, func(a, b uint32) int { return fold.ClaimOrder(ib.cards[a].card, ib.cards[b].card) })

	le := binary.LittleEndian
	out := make([]byte, 0, IndexHeaderLen+EntryLen*(len(ib.cards)+len(ib.keys)+len(ib.receipts)+len(ib.refs))+orderLen*len(order))
	out = append(out, indexMagic[:]...)
	out = le.AppendUint64(out, uint64(id.size))
	out = le.AppendUint64(out, uint64(id.mtime))
	out = le.AppendUint32(out, id.headerCRC)
	out = le.AppendUint32(out, uint32(len(ib.cards)))
	out = le.AppendUint32(out, uint32(len(ib.keys)))
	out = le.AppendUint32(out, uint32(len(ib.receipts)))
	out = le.AppendUint32(out, uint32(len(order)))
	out = le.AppendUint64(out, uint64(ib.conflicts))
	out = le.AppendUint32(out, uint32(len(ib.refs)))
	var pool []byte
	for _, t := range [][]indexEntry{ib.cards, ib.keys, ib.receipts, ib.refs} {
		for _, e := range t {
			out = le.AppendUint32(out, uint32(len(pool)))
			out = le.AppendUint32(out, uint32(len(e.key)))
			out = le.AppendUint64(out, uint64(e.off))
			out = le.AppendUint32(out, uint32(e.n))
			pool = append(pool, e.key...)
		}
	}
	for _, i := range order {
		var lease int64
		if end := leaseEnd(ib.cards[i].card); !end.IsZero() {
			lease = end.UnixNano()
		}
		out = le.AppendUint32(out, i)
		out = le.AppendUint64(out, uint64(lease))
	}
	out = append(out, pool...)
	return SealIndex(out)
}

// leaseEnd is when the lease a card holds runs out; zero when it holds
// none, and never (the largest time the list holds) for a card in review,
// which holds its paths until a verdict. The claim-order list records it
// so a claim can pass over cards under a live lease or in review unread,
// and the path holders are found without reading any other card.
func leaseEnd(c *wire.Card) time.Time {
	switch {
	case c.Status == wire.StatusReview:
		return time.Unix(0, math.MaxInt64)
	case c.Status == wire.StatusClaimed && c.LeaseExpiresAt != nil:
		return *c.LeaseExpiresAt
	}
	return time.Time{}
}

// SealIndex appends the block checksums to an index: one indexSum per
// IndexBlock bytes, their count, and an indexSum of those two.
func SealIndex(body []byte) []byte {
	le := binary.LittleEndian
	out := body
	n := 0
	for off := 0; off < len(body); off += IndexBlock {
		out = le.AppendUint32(out, indexSum(body[off:min(off+IndexBlock, len(body))]))
		n++
	}
	out = le.AppendUint32(out, uint32(n))
	return le.AppendUint32(out, indexSum(out[len(body):]))
}

// writeIndex stores the index for a snapshot in the backlog's cache. It is
// a cache: failing to write it costs speed, not correctness, so errors are
// only returned for tests to see.
func writeIndex(dir string, id snapshotID, ib *IndexBuild) error {
	if err := CheckLocalPath(dir, CacheDir+"/"+IndexFile); err != nil {
		return err
	}
	cache := filepath.Join(dir, CacheDir)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	return ReplaceAtomic(filepath.Join(cache, IndexFile), ib.encode(id), nil)
}
