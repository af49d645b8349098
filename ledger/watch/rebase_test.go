package watch

import (
	"context"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// TestFollowAcrossRebaseDeliversOnce: ApplyUpstream (bl sync) re-stamps a
// local event that sorts before upstream's newest event with a later at
// but the same id; the re-stamped copy is "after" the follower's cursor,
// and Follow must still not deliver it again.
func TestFollowAcrossRebaseDeliversOnce(t *testing.T) {
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

// TestFollowAcrossRebaseDeliversOlderUpstreamEvents: an upstream event
// older than the follower's cursor (another machine wrote it before this
// clone's last event) lands before the cursor in (at, id) order; it is new
// to this backlog, and Follow delivers it.
func TestFollowAcrossRebaseDeliversOlderUpstreamEvents(t *testing.T) {
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
