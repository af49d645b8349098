package store

import (
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// snapshotSource reads a snapshot's lines through its index and, the first
// time the index fails (a damaged block, a line that does not match), the
// whole snapshot instead: that fallback is here and nowhere else. Only a
// snapshot that does not read whole is an error, and every later read
// returns that same error.
type snapshotSource struct {
	dir, path string
	f         *os.File // the snapshot, held open: its lines never change
	info      os.FileInfo
	id        snapshotID
	cards     int            // cards in the snapshot, from its header
	ix        *snapshotIndex // nil once the index has failed
	whole     *wholeSnapshot // the snapshot read whole, once the index failed
	err       error          // why the snapshot does not read whole
}

// useWhole drops the index after it failed and returns the snapshot read
// whole, reading it on first use.
func (src *snapshotSource) useWhole() (*wholeSnapshot, error) {
	if src.ix != nil {
		src.ix.close()
		src.ix = nil
	}
	if src.whole == nil && src.err == nil {
		s, _, err := readWhole(src.dir, src.path, src.f, src.info, src.id)
		if err != nil {
			src.err = err
		} else {
			src.whole = &wholeSnapshot{s: s}
		}
	}
	return src.whole, src.err
}

func (src *snapshotSource) Card(id string) (*wire.Card, error) {
	if src.ix != nil {
		var c *wire.Card
		if err := src.ix.read(func() (err error) { c, err = src.ix.card(id); return err }); err == nil {
			return c, nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return nil, err
	}
	return w.card(id), nil
}

func (src *snapshotSource) KeyOwner(key string) (string, bool, error) {
	if src.ix != nil {
		var id string
		var ok bool
		if err := src.ix.read(func() (err error) { id, ok, err = src.ix.keyOwner(key); return err }); err == nil {
			return id, ok, nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return "", false, err
	}
	id, ok := w.s.KeyOwner(key)
	return id, ok, nil
}

func (src *snapshotSource) Receipt(rid string) (wire.Receipt, bool, error) {
	if src.ix != nil {
		var r wire.Receipt
		var ok bool
		if err := src.ix.read(func() (err error) { r, ok, err = src.ix.receipt(rid); return err }); err == nil {
			return r, ok, nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return wire.Receipt{}, false, err
	}
	r, ok := w.s.Receipt(rid)
	return r, ok, nil
}

func (src *snapshotSource) Count() int { return src.cards }

func (src *snapshotSource) Candidates(from int, leasedAt time.Time, skip func([]byte) bool, fn func(*wire.Card) bool) (int, error) {
	var last *wire.Card // the last card fn saw, to carry on after it
	if src.ix != nil {
		stopped := false
		var next int
		err := src.ix.read(func() (err error) {
			next, err = src.ix.candidates(from, leasedAt, skip, func(c *wire.Card) bool {
				last = c
				stopped = !fn(c)
				return !stopped
			})
			return err
		})
		if err == nil || stopped {
			return next, nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return 0, err
	}
	// The whole snapshot has no index positions: it goes through its
	// cards in claim order and reports none (the caller skips what it has).
	for _, c := range w.inClaimOrder() {
		if last != nil && fold.ClaimOrder(c, last) <= 0 {
			continue
		}
		if skip([]byte(c.ID)) || (!leasedAt.IsZero() && leasedAt.Before(leaseEnd(c))) {
			continue
		}
		cp := c.Clone()
		if !fn(&cp) {
			return 0, nil
		}
	}
	return 0, nil
}

func (src *snapshotSource) Leased(at time.Time, skip func([]byte) bool, fn func(*wire.Card) bool) error {
	if src.ix != nil {
		if err := src.ix.read(func() error { return src.ix.leased(at, skip, fn) }); err == nil {
			return nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return err
	}
	for _, c := range w.inClaimOrder() {
		if skip([]byte(c.ID)) || !at.Before(leaseEnd(c)) {
			continue
		}
		cp := c.Clone()
		if !fn(&cp) {
			return nil
		}
	}
	return nil
}

func (src *snapshotSource) Referrers(id string) ([]*wire.Card, error) {
	if src.ix != nil {
		var cs []*wire.Card
		if err := src.ix.read(func() (err error) { cs, err = src.ix.referrers(id); return err }); err == nil {
			return cs, nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return nil, err
	}
	var out []*wire.Card
	w.s.Range(func(c *wire.Card) bool {
		if slices.Contains(namedBy(c), id) {
			cp := c.Clone()
			out = append(out, &cp)
		}
		return true
	})
	return out, nil
}

func (src *snapshotSource) Named(prefixes []string, keySuffix string) ([]string, error) {
	if src.ix != nil {
		var ids []string
		if err := src.ix.read(func() (err error) { ids, err = src.ix.named(prefixes, keySuffix); return err }); err == nil {
			return ids, nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return nil, err
	}
	var out []string
	w.s.Range(func(c *wire.Card) bool {
		if strings.HasSuffix(c.IdempotencyKey, keySuffix) || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(c.ID, p) }) {
			out = append(out, c.ID)
		}
		return true
	})
	return out, nil
}

func (src *snapshotSource) Fill(cards map[string]*wire.Card, requests map[string]wire.Receipt) error {
	if src.ix != nil {
		if err := src.ix.read(func() error { return src.ix.fill(cards, requests) }); err == nil {
			return nil
		}
	}
	w, err := src.useWhole()
	if err != nil {
		return err
	}
	w.s.Range(func(c *wire.Card) bool {
		if _, ok := cards[c.ID]; !ok {
			cp := c.Clone()
			cards[c.ID] = &cp
		}
		return true
	})
	w.s.RangeReceipts(func(rid string, r wire.Receipt) bool {
		if _, ok := requests[rid]; !ok {
			requests[rid] = r
		}
		return true
	})
	return nil
}

func (src *snapshotSource) Close() {
	src.ix.close()
	src.ix = nil
	if src.f != nil {
		src.f.Close()
		src.f = nil
	}
	src.whole = nil
	if src.err == nil {
		src.err = fold.ErrReleased
	}
}

// wholeSnapshot is a snapshot decoded in full. It hands out copies, so its
// own cards keep the snapshot's values and its claim order stays sorted.
type wholeSnapshot struct {
	s     *fold.State
	order []*wire.Card // ready and claimed cards in claim order; built on first use
}

func (w *wholeSnapshot) card(id string) *wire.Card {
	if c := w.s.Find(id); c != nil {
		cp := c.Clone()
		return &cp
	}
	return nil
}

func (w *wholeSnapshot) inClaimOrder() []*wire.Card {
	if w.order == nil {
		w.order = []*wire.Card{}
		w.s.Range(func(c *wire.Card) bool {
			if c.Status == wire.StatusReady || c.Status == wire.StatusClaimed || c.Status == wire.StatusReview {
				w.order = append(w.order, c)
			}
			return true
		})
		slices.SortFunc(w.order, fold.ClaimOrder)
	}
	return w.order
}

// readWhole decodes the whole snapshot f (at path, with the given
// identity) into a new state and caches its index for the next load while
// the path still names that file: the one way a snapshot is read without
// its index, when there is none and when it fails. Writing the cache is
// best effort: a reader never needs it to answer.
func readWhole(dir, path string, f *os.File, fi os.FileInfo, id snapshotID) (*fold.State, wire.SnapshotHeader, error) {
	ib := &IndexBuild{}
	s, hdr, err := DecodeSnapshot(path, io.NewSectionReader(f, 0, fi.Size()), ib)
	if err != nil {
		return nil, hdr, err
	}
	if now, err := os.Stat(path); err == nil && os.SameFile(now, fi) {
		_ = writeIndex(dir, id, ib)
	}
	return s, hdr, nil
}
