package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestWritersKeepTailCheckpoint: calls that each open the backlog, write
// and close, as bl's processes do, leave a tail checkpoint behind once
// the ledger has grown past the snapshot, and a call reading through it
// answers what folding the whole ledger answers.
func TestWritersKeepTailCheckpoint(t *testing.T) {
	e := newEnv(t)
	noCompaction(e)
	for i := range 30 {
		e.create(fmt.Sprintf("N%02d", i))
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.b.Close()
	for i := range 150 {
		b := e.open()
		id := fmt.Sprintf("N%02d", i%30)
		var err error
		switch i % 3 {
		case 0:
			_, err = b.Note(e.ctx, NoteRequest{Mutation: m, ID: id, Text: fmt.Sprint("note ", i)})
		case 1:
			var c *Card
			if c, err = b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: id, Owner: "w", TTL: time.Hour}); err == nil {
				_, err = b.Release(e.ctx, LeaseRequest{Mutation: m, ID: id, Owner: "w", Epoch: c.ClaimEpoch})
			}
		case 2:
			_, _, err = b.Create(e.ctx, CreateRequest{Mutation: m, Title: fmt.Sprint("late ", i), IdempotencyKey: fmt.Sprint("k", i%7)})
		}
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
	}
	path := filepath.Join(e.dir, CacheDir, CheckpointFile)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no tail checkpoint after 150 writes: %v", err)
	}
	answers := func() any {
		b := e.open()
		defer b.Close()
		ready, err := b.Ready(Filter{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		all, err := b.List(Filter{}, SortClaim)
		if err != nil {
			t.Fatal(err)
		}
		st, err := b.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return []any{ready, all, st}
	}
	got := answers()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if want := answers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("answers through the checkpoint differ:\n got %+v\nwant %+v", got, want)
	}
}
