package watch

import (
	"context"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// TestReviewFollowAcrossRebaseRedelivers shows that Follow delivers an event
// twice across ApplyUpstream (bl sync): Rebase re-stamps a local event that
// sorts before upstream's newest event with a later at but the same id, so
// the re-stamped copy is "after" the follower's cursor and is delivered
// again, although the follower already passed it on.
func TestReviewFollowAcrossRebaseRedelivers(t *testing.T) {
	dir, b := setup(t)
	create(t, b, "L") // local event, older than anything upstream
	time.Sleep(2 * time.Millisecond)
	upDir, up := setup(t)
	create(t, up, "U")
	upstream, err := ledger.ReadTree(upDir)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := stream(ctx, dir, ledger.Cursor{})
	first := collect(t, ch, 1)
	if first[0].Card != "L" {
		t.Fatalf("first event is about %s", first[0].Card)
	}
	if _, _, err := b.ApplyUpstream(ctx, upstream); err != nil {
		t.Fatal(err)
	}
	create(t, b, "N") // a marker, so the test knows when the follower caught up
	var got []*ledger.Event
	for {
		e := collect(t, ch, 1)[0]
		got = append(got, e)
		if e.Card == "N" {
			break
		}
	}
	seen := map[string]bool{first[0].ID: true}
	for _, e := range got {
		if seen[e.ID] {
			t.Fatalf("event %s (%s of %s) delivered twice; after the rebase the follower got %v", e.ID, e.Op, e.Card, cards(got))
		}
		seen[e.ID] = true
	}
}

// TestReviewFollowAcrossRebaseSkips shows the other half: an upstream event
// older than the follower's cursor (another machine wrote it before this
// clone's last event) lands before the cursor in (at, id) order, so Follow
// never delivers it, though it is new to this backlog.
func TestReviewFollowAcrossRebaseSkips(t *testing.T) {
	upDir, up := setup(t)
	create(t, up, "U") // upstream event, older than the local one
	time.Sleep(2 * time.Millisecond)
	dir, b := setup(t)
	create(t, b, "L")
	upstream, err := ledger.ReadTree(upDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := stream(ctx, dir, ledger.Cursor{})
	collect(t, ch, 1) // L
	if _, _, err := b.ApplyUpstream(ctx, upstream); err != nil {
		t.Fatal(err)
	}
	create(t, b, "N")
	var got []*ledger.Event
	for {
		e := collect(t, ch, 1)[0]
		got = append(got, e)
		if e.Card == "N" {
			break
		}
	}
	for _, e := range got {
		if e.Card == "U" {
			return
		}
	}
	t.Fatalf("upstream's create of U was never delivered; after the rebase the follower got %v", cards(got))
}
