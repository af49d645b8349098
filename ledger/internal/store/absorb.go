package store

import (
	"bytes"
	"context"
	"fmt"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Absorb is ledger.Backlog.Absorb: the lines of events this backlog does
// not hold yet appended unchanged, stamps included, under the lock, and
// folded; it returns how many.
func (b *Store) Absorb(ctx context.Context, lines []byte) (n int, err error) {
	type line struct {
		e   *wire.Event
		raw []byte
	}
	var in []line
	for rest := lines; len(rest) > 0; {
		raw := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			raw, rest = rest[:i+1], rest[i+1:]
		} else {
			raw, rest = append(rest[:len(rest):len(rest)], '\n'), nil
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		e, err := wire.DecodeLine(raw)
		if err != nil {
			return 0, fmt.Errorf("%w: an absorbed line: %w", wire.ErrCorrupt, err)
		}
		in = append(in, line{e, raw})
	}
	if len(in) == 0 {
		return 0, nil
	}
	err = b.withLock(ctx, func() error {
		var buf []byte
		for _, l := range in {
			if b.holds(l.e) {
				continue
			}
			buf = append(buf, l.raw...)
			n++
		}
		if n == 0 {
			return nil
		}
		if err := b.appendDurably(buf); err != nil {
			return err
		}
		return b.catchUp()
	})
	if err != nil {
		n = 0
	}
	return n, err
}

// holds reports whether the backlog already folded e: the ledger read it,
// or the fold remembers it (its request's receipt, or its conflict).
func (b *Store) holds(e *wire.Event) bool {
	if b.pos.has(idHash(e.ID)) {
		return true
	}
	if e.RequestID != "" {
		if r, ok := b.state.Receipt(e.RequestID); ok && r.Event == e.ID {
			return true
		}
	}
	_, refused := b.state.ConflictOf(e.ID)
	return refused
}
