package watch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// logged runs Log in the background; events arrive on the first channel
// (card ids), Log's result on the second.
func logged(ctx context.Context, b *ledger.Backlog, f ledger.HistoryFilter, follow bool) (<-chan string, <-chan error) {
	out := make(chan string, 64)
	done := make(chan error, 1)
	go func() {
		done <- Log(ctx, b, f, follow, func(e *ledger.Event, _ *ledger.Conflict, _ []ledger.Change) error {
			out <- e.Card
			return nil
		})
	}()
	return out, done
}

// next receives one card id, failing on a hang.
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("no event arrived")
	}
	return ""
}

func openAt(t *testing.T, dir string, at time.Time) *ledger.Backlog {
	t.Helper()
	b, err := ledger.Open(dir, ledger.Options{Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLogFollowAppliesSince: an event older than --since that arrives while
// following (a sync brings in what another machine wrote earlier) is left
// out, as the history walk leaves it out.
func TestLogFollowAppliesSince(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	upDir, _ := setup(t)
	create(t, openAt(t, upDir, t0), "U") // another machine, earlier
	dir, _ := setup(t)
	local := openAt(t, dir, t0.Add(time.Hour))
	create(t, local, "L")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, done := logged(ctx, openAt(t, dir, t0.Add(time.Hour)), ledger.HistoryFilter{Since: t0.Add(30 * time.Minute)}, true)
	if got := next(t, ch); got != "L" {
		t.Fatalf("history gave %s, want L", got)
	}
	upstream, err := ledger.ReadTree(upDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := local.ApplyUpstream(ctx, upstream); err != nil {
		t.Fatal(err)
	}
	create(t, local, "N") // a marker, so the test knows the follower caught up
	if got := next(t, ch); got != "N" {
		t.Fatalf("following gave %s, older than --since; want N", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Log: %v", err)
	}
}

// TestLogFollowLimit: after --from, --limit N counts history and new
// events together and ends the follow; without --from it picks the newest
// N of the history and the follow goes on.
func TestLogFollowLimit(t *testing.T) {
	dir, b := setup(t)
	create(t, b, "A")
	create(t, b, "B")
	var from ledger.Cursor
	if _, err := b.History(ledger.HistoryFilter{Limit: 1}, func(e *ledger.Event, _ *ledger.Conflict) error {
		from = ledger.CursorOf(e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	writer, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}

	ch, done := logged(context.Background(), b, ledger.HistoryFilter{From: from, Limit: 3}, true)
	create(t, writer, "C")
	create(t, writer, "D")
	create(t, writer, "E")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Log: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Log --from --limit 3 --follow did not stop after 3 events")
	}
	var got []string
	for len(ch) > 0 {
		got = append(got, <-ch)
	}
	if fmt.Sprint(got) != "[B C D]" {
		t.Fatalf("--from A --limit 3 --follow gave %v, want [B C D]", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, done = logged(ctx, b, ledger.HistoryFilter{Limit: 1}, true)
	if got := next(t, ch); got != "E" {
		t.Fatalf("--limit 1 --follow began with %s, want the newest, E", got)
	}
	create(t, writer, "F")
	if got := next(t, ch); got != "F" {
		t.Fatalf("--limit 1 --follow then gave %s, want F", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Log: %v", err)
	}
}
