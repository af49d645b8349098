package fold

import (
	"errors"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// CardSource is where a State finds what it has not read into memory yet:
// the cards, idempotency keys and receipts of the snapshot it started
// from. Snapshot files are immutable, so reading one lazily is the same
// fold as reading it whole. Every read returns its error: a read that fails
// is never "there is none". A card handed out belongs to the state that
// asked: the source keeps no reference to it.
type CardSource interface {
	// Card returns the card with the given id; nil and no error when the
	// snapshot has none.
	Card(id string) (*wire.Card, error)
	// KeyOwner returns the id of the card created with an idempotency key.
	KeyOwner(key string) (id string, ok bool, err error)
	// Receipt returns what a request id did, as the snapshot remembers it.
	Receipt(requestID string) (r wire.Receipt, ok bool, err error)
	// Count is the number of cards in the snapshot.
	Count() int
	// Candidates calls fn with the snapshot's ready and claimed cards in
	// claim order, leaving out those skip names (by id, as bytes, so the
	// index can ask without allocating) and, when leasedAt is not zero,
	// those whose lease is still live at leasedAt, until fn returns false.
	// It starts at from, a next an earlier call returned for the same
	// leasedAt (0: the start); next is where a later call goes on.
	Candidates(from int, leasedAt time.Time, skip func(id []byte) bool, fn func(c *wire.Card) bool) (next int, err error)
	// Leased calls fn with the snapshot's cards whose lease is live at
	// at (cards in review count as leased for ever), leaving out those skip
	// names, until fn returns false.
	Leased(at time.Time, skip func(id []byte) bool, fn func(c *wire.Card) bool) error
	// Referrers returns the snapshot's cards that name id as parent,
	// dependency or link.
	Referrers(id string) ([]*wire.Card, error)
	// Named returns the ids of the snapshot's cards whose id starts with
	// one of prefixes, and of those created with an idempotency key that
	// ends in keySuffix: a superset the caller checks on the cards.
	Named(prefixes []string, keySuffix string) ([]string, error)
	// Fill adds every card and receipt the maps lack.
	Fill(cards map[string]*wire.Card, requests map[string]wire.Receipt) error
	// Close releases the files the source holds; reads fail after it.
	Close()
}

// releasedSource is the source of a state whose backlog was closed.
type releasedSource struct{}

var ErrReleased = errors.New("ledger: backlog used after Close")

func (releasedSource) Card(string) (*wire.Card, error) { return nil, ErrReleased }

func (releasedSource) KeyOwner(string) (string, bool, error) { return "", false, ErrReleased }

func (releasedSource) Named([]string, string) ([]string, error) { return nil, ErrReleased }

func (releasedSource) Receipt(string) (wire.Receipt, bool, error) {
	return wire.Receipt{}, false, ErrReleased
}

func (releasedSource) Count() int { return 0 }

func (releasedSource) Referrers(string) ([]*wire.Card, error) { return nil, ErrReleased }

func (releasedSource) Fill(map[string]*wire.Card, map[string]wire.Receipt) error { return ErrReleased }

func (releasedSource) Close() {}

func (releasedSource) Leased(time.Time, func([]byte) bool, func(*wire.Card) bool) error {
	return ErrReleased
}

func (releasedSource) Candidates(int, time.Time, func([]byte) bool, func(*wire.Card) bool) (int, error) {
	return 0, ErrReleased
}
