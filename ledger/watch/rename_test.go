package watch

import (
	"context"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// TestFollowAcrossRenameDeliversRenamedEvents: bl sync renames a local
// card whose id upstream created too (its events keep their ids, now
// naming a fresh id). A follower that already delivered them under the
// old id must get them again under the new one, or it never learns the
// new card exists and keeps the local card's events on upstream's.
func TestFollowAcrossRenameDeliversRenamedEvents(t *testing.T) {
	dir, b := setup(t)
	create(t, b, "A4")
	create(t, b, "N0")
	upDir, up := setup(t)
	create(t, up, "A4")
	upstream, err := ledger.ReadTree(upDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := stream(ctx, dir, ledger.Cursor{})
	first := collect(t, ch, 2) // A4 (local), N0
	_, res, err := b.ApplyUpstream(ctx, upstream)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Renamed) != 1 {
		t.Fatalf("renamed %v", res.Renamed)
	}
	to := res.Renamed[0].To
	create(t, b, "N")
	var got []*ledger.Event
	for {
		e := collect(t, ch, 1)[0]
		got = append(got, e)
		if e.Card == "N" {
			break
		}
	}
	var renamed, again int
	for _, e := range got {
		switch {
		case e.ID == first[0].ID && e.Card == to:
			renamed++
		case e.ID == first[1].ID:
			again++ // N0 was not renamed: delivered once
		}
	}
	if renamed != 1 || again != 0 {
		t.Fatalf("after the rename of A4 to %s the follower got %s; want the local create once more, on %s, and N0 not again", to, strings.Join(cards(got), " "), to)
	}
}
