package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// open makes a backlog in a fresh temporary directory and opens it on a
// clock that starts at 09:00 UTC on 1 March 2026 and moves one second per
// reading, so the examples print the same times on every run. done removes
// the directory.
func open() (b *ledger.Backlog, done func()) {
	tmp, err := os.MkdirTemp("", "bl-example-")
	if err != nil {
		log.Fatal(err)
	}
	dir := filepath.Join(tmp, ".backlog")
	if _, err := ledger.Init(dir); err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		now = now.Add(time.Second)
		return now
	}
	if b, err = ledger.Open(dir, ledger.Options{Clock: clock}); err != nil {
		log.Fatal(err)
	}
	return b, func() { b.Close(); os.RemoveAll(tmp) }
}

var (
	ctx = context.Background()
	me  = ledger.Mutation{Actor: "alice@laptop"}
)

// create adds the cards for an example: id, title, priority.
func create(b *ledger.Backlog, cards ...ledger.CreateRequest) {
	for _, r := range cards {
		r.Mutation = me
		if _, _, err := b.Create(ctx, r); err != nil {
			log.Fatal(err)
		}
	}
}

// An agent's loop: claim the best card, heartbeat while working, complete
// it with the epoch the claim gave.
func Example() {
	b, done := open()
	defer done()
	create(b,
		ledger.CreateRequest{ID: "A1", Title: "Write the schema", Priority: 5},
		ledger.CreateRequest{ID: "A2", Title: "Serve the API", DependsOn: []string{"A1"}})

	card, err := b.Claim(ctx, ledger.ClaimRequest{Mutation: me, Owner: "worker-1", TTL: 10 * time.Minute})
	if err != nil || card == nil {
		log.Fatal(card, err)
	}
	fmt.Println("claimed", card.ID, "epoch", card.ClaimEpoch)

	lease := ledger.HeartbeatRequest{Mutation: me, ID: card.ID, Owner: "worker-1", Epoch: card.ClaimEpoch}
	if _, err := b.Heartbeat(ctx, lease); err != nil {
		log.Fatal(err)
	}
	if _, err := b.Complete(ctx, ledger.LeaseRequest{Mutation: me, ID: card.ID, Owner: "worker-1", Epoch: card.ClaimEpoch, Reason: "merged"}); err != nil {
		log.Fatal(err)
	}
	ready, err := b.Ready(ledger.Filter{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range ready {
		fmt.Println("now ready:", c.ID, c.Title)
	}
	// Output:
	// claimed A1 epoch 1
	// now ready: A2 Serve the API
}

// Open a backlog made by Init (bl init).
func ExampleOpen() {
	tmp, err := os.MkdirTemp("", "bl-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, ".backlog")
	if _, err := ledger.Init(dir); err != nil {
		log.Fatal(err)
	}
	b, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	cards, err := b.List(ledger.Filter{}, ledger.SortClaim)
	fmt.Println(len(cards), "cards", err)
	// Output:
	// 0 cards <nil>
}

// Create with an idempotency key: a repeat returns the card it made and
// appends nothing.
func ExampleBacklog_Create() {
	b, done := open()
	defer done()
	r := ledger.CreateRequest{Mutation: me, ID: "B7", Title: "Fix the login redirect", Phase: "M1", IdempotencyKey: "issue-412"}
	card, created, err := b.Create(ctx, r)
	fmt.Println(card.ID, card.Status, card.Phase, card.CreatedAt.Format(time.RFC3339), created, err)
	r.ID = "" // a retry that would otherwise make a second card
	card, created, err = b.Create(ctx, r)
	fmt.Println(card.ID, created, err)
	// Output:
	// B7 ready M1 2026-03-01T09:00:01Z true <nil>
	// B7 false <nil>
}

// Claim the best claimable card (priority, then oldest, then id); a nil
// card means nothing is claimable.
func ExampleBacklog_Claim() {
	b, done := open()
	defer done()
	create(b,
		ledger.CreateRequest{ID: "low", Title: "Tidy the README"},
		ledger.CreateRequest{ID: "high", Title: "Fix the crash", Priority: 9})
	for _, owner := range []string{"worker-1", "worker-2", "worker-3"} {
		card, err := b.Claim(ctx, ledger.ClaimRequest{Mutation: me, Owner: owner, TTL: time.Hour})
		if err != nil {
			log.Fatal(err)
		}
		if card == nil {
			fmt.Println(owner, "found nothing claimable")
			continue
		}
		fmt.Println(owner, "claimed", card.ID, "epoch", card.ClaimEpoch, "until", card.LeaseExpiresAt.Format(time.Kitchen))
	}
	// Output:
	// worker-1 claimed high epoch 1 until 10:00AM
	// worker-2 claimed low epoch 1 until 10:00AM
	// worker-3 found nothing claimable
}

// Heartbeat renews the lease and reports progress; anyone but the holder
// of the current epoch is fenced out.
func ExampleBacklog_Heartbeat() {
	b, done := open()
	defer done()
	create(b, ledger.CreateRequest{ID: "A1", Title: "Migrate the users table"})
	card, _ := b.Claim(ctx, ledger.ClaimRequest{Mutation: me, ID: "A1", Owner: "worker-1", TTL: 10 * time.Minute})
	progress := 40
	renewed, err := b.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: me, ID: "A1", Owner: "worker-1", Epoch: card.ClaimEpoch, Progress: &progress})
	fmt.Println(*renewed.Progress, renewed.LeaseExpiresAt.Format(time.TimeOnly), err)
	// Another worker, or this one with an old epoch, must stop.
	_, err = b.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: me, ID: "A1", Owner: "worker-2"})
	fmt.Println(errors.Is(err, ledger.ErrFenced))
	// Output:
	// 40 09:10:03 <nil>
	// true
}

// Complete closes a card; with Owner and Epoch the call is fenced like a
// heartbeat, without them it is a person closing the card by hand.
func ExampleBacklog_Complete() {
	b, done := open()
	defer done()
	create(b, ledger.CreateRequest{ID: "A1", Title: "Ship it"})
	card, _ := b.Claim(ctx, ledger.ClaimRequest{Mutation: me, ID: "A1", Owner: "worker-1"})
	closed, err := b.Complete(ctx, ledger.LeaseRequest{Mutation: me, ID: "A1", Owner: "worker-1", Epoch: card.ClaimEpoch, Reason: "v1.2.0"})
	fmt.Println(closed.Status, closed.CloseNote, closed.ClosedAt.Format(time.TimeOnly), err)
	// Output:
	// done v1.2.0 09:00:03 <nil>
}

// List selects cards by status, phase, label and owner; Ready lists the
// claimable ones in claim order.
func ExampleBacklog_List() {
	b, done := open()
	defer done()
	create(b,
		ledger.CreateRequest{ID: "A1", Title: "Schema", Phase: "M1"},
		ledger.CreateRequest{ID: "A2", Title: "API", Phase: "M1", DependsOn: []string{"A1"}},
		ledger.CreateRequest{ID: "B1", Title: "Docs", Phase: "M2"})
	m1, _ := b.List(ledger.Filter{Phase: "M1"}, ledger.SortID)
	for _, c := range m1 {
		fmt.Println("M1:", c.ID, c.Title)
	}
	ready, _ := b.Ready(ledger.Filter{})
	for _, c := range ready {
		fmt.Println("ready:", c.ID)
	}
	// Output:
	// M1: A1 Schema
	// M1: A2 API
	// ready: A1
	// ready: B1
}

// History walks every event, oldest first, across compactions; a cursor
// resumes just after an event.
func ExampleBacklog_History() {
	b, done := open()
	defer done()
	create(b, ledger.CreateRequest{ID: "A1", Title: "Schema"})
	card, _ := b.Claim(ctx, ledger.ClaimRequest{Mutation: me, ID: "A1", Owner: "worker-1"})
	if _, err := b.Compact(ctx); err != nil { // moves the events so far to archive/
		log.Fatal(err)
	}
	if _, err := b.Complete(ctx, ledger.LeaseRequest{Mutation: me, ID: "A1", Owner: "worker-1", Epoch: card.ClaimEpoch}); err != nil {
		log.Fatal(err)
	}
	_, err := b.History(ledger.HistoryFilter{Card: "A1"}, func(e *ledger.Event, conflict *ledger.Conflict) error {
		fmt.Println(e.At.Format(time.TimeOnly), e.Op, e.Card)
		return nil
	})
	fmt.Println(err)
	// Output:
	// 09:00:01 create A1
	// 09:00:02 claim A1
	// 09:00:03 complete A1
	// <nil>
}

// A damaged line is reported, never skipped: the error matches ErrCorrupt,
// and a *CorruptError says which file, line and byte offset.
func ExampleCorruptError() {
	b, done := open()
	defer done()
	create(b, ledger.CreateRequest{ID: "A1", Title: "first"})
	f, err := os.OpenFile(filepath.Join(b.Dir(), ledger.LedgerFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		log.Fatal(err)
	}
	f.WriteString("{\"v\":1,\"garbage\"}\n{\"v\":1}\n") // a damaged line, then another
	f.Close()
	_, err = b.List(ledger.Filter{}, ledger.SortClaim)
	var ce *ledger.CorruptError
	if errors.As(err, &ce) {
		fmt.Println(errors.Is(err, ledger.ErrCorrupt), filepath.Base(ce.Path), "line", ce.Line)
	}
	// Output:
	// true ledger.jsonl line 2
}
