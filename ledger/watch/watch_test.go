package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

var m = ledger.Mutation{Actor: "tester"}

func setup(t *testing.T) (string, *ledger.Backlog) {
	t.Helper()
	dir := t.TempDir()
	if _, err := ledger.Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, b
}

func create(t *testing.T, b *ledger.Backlog, id string) {
	t.Helper()
	if _, _, err := b.Create(context.Background(), ledger.CreateRequest{Mutation: m, ID: id, Title: id}); err != nil {
		t.Fatal(err)
	}
}

// stream runs Follow from from in the background: events arrive on the
// first channel; the second receives Follow's result when it stops, then
// both close.
func stream(ctx context.Context, dir string, from ledger.Cursor) (<-chan *ledger.Event, <-chan error) {
	out := make(chan *ledger.Event)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		defer close(out)
		done <- Follow(ctx, dir, from, func(e *ledger.Event) error {
			select {
			case out <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return out, done
}

// collect reads n events from ch, failing if they take longer than the
// generous bound (a hang, not a timing assertion).
func collect(t *testing.T, ch <-chan *ledger.Event, n int) []*ledger.Event {
	t.Helper()
	var got []*ledger.Event
	deadline := time.After(20 * time.Second)
	for len(got) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("stream closed after %d of %d events", len(got), n)
			}
			got = append(got, e)
		case <-deadline:
			t.Fatalf("only %d of %d events arrived", len(got), n)
		}
	}
	return got
}

func cards(evs []*ledger.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Card
	}
	return out
}

func TestFollowAcrossCompactionAndRepair(t *testing.T) {
	dir, b := setup(t)
	create(t, b, "C00")
	create(t, b, "C01")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, done := stream(ctx, dir, ledger.Cursor{})
	got := collect(t, ch, 2)

	writer, _ := ledger.Open(dir, ledger.Options{})
	create(t, writer, "C02")
	if _, err := writer.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	create(t, writer, "C03")
	got = append(got, collect(t, ch, 2)...)

	// A torn tail set aside by the next writer; then a repair that
	// rewrites the file.
	f, _ := os.OpenFile(filepath.Join(dir, ledger.LedgerFile), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"v":1,"torn`)
	f.Close()
	create(t, writer, "C04")
	if _, err := writer.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	create(t, writer, "C05")
	if _, err := ledger.Repair(ctx, dir, time.Second, time.Now()); err != nil {
		t.Fatal(err)
	}
	create(t, writer, "C06")
	got = append(got, collect(t, ch, 3)...)

	want := []string{"C00", "C01", "C02", "C03", "C04", "C05", "C06"}
	if fmt.Sprint(cards(got)) != fmt.Sprint(want) {
		t.Fatalf("delivered %v, want %v", cards(got), want)
	}
	select {
	case e := <-ch:
		t.Fatalf("extra event %s %s", e.Op, e.Card)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow: %v", err)
	}

	// Resuming from any delivered cursor gives exactly the rest.
	for i := range got {
		ctx2, cancel2 := context.WithCancel(context.Background())
		ch2, _ := stream(ctx2, dir, ledger.CursorOf(got[i]))
		rest := collect(t, ch2, len(got)-i-1)
		if fmt.Sprint(cards(rest)) != fmt.Sprint(want[i+1:]) {
			t.Fatalf("resume after %s: %v", want[i], cards(rest))
		}
		cancel2()
	}
}

func TestFollowManyWriters(t *testing.T) {
	dir, b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := stream(ctx, dir, ledger.Cursor{})
	const writers, each = 4, 25
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			h, err := ledger.Open(dir, ledger.Options{})
			if err != nil {
				errs <- err
				return
			}
			for i := range each {
				if _, _, err := h.Create(ctx, ledger.CreateRequest{Mutation: m, ID: fmt.Sprintf("W%d-%02d", w, i), Title: "x"}); err != nil {
					errs <- err
					return
				}
				if i == each/2 && w == 0 {
					if _, err := h.Compact(ctx); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	got := collect(t, ch, writers*each)
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for i, e := range got {
		if seen[e.Card] {
			t.Fatalf("%s delivered twice", e.Card)
		}
		seen[e.Card] = true
		if i > 0 && !ledger.CursorOf(got[i-1]).Before(e) {
			t.Fatalf("event %d out of order", i)
		}
	}
	_ = b
}
