package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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

// TestClaimWritesNothingOnCheckpointFault: a card line of the tail
// checkpoint that does not read (sealed with valid checksums, as only a
// local forgery can be) makes a claim that reaches it fail, and write
// nothing: here the best card waits on the damaged one, and the claim
// must not go on to take the next card while it reports the damage.
func TestClaimWritesNothingOnCheckpointFault(t *testing.T) {
	e := newEnv(t)
	noCompaction(e)
	e.create("B")
	c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "B", Owner: "w", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "B", Owner: "w", Epoch: c.ClaimEpoch}); err != nil {
		t.Fatal(err)
	}
	e.create("A", func(r *CreateRequest) { r.Priority, r.DependsOn = 9, []string{"B"} })
	e.create("C", func(r *CreateRequest) { r.Priority = 5 })
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.b.Close()
	for i := range 70 { // calls past the snapshot: B's line goes in the checkpoint
		b := e.open()
		_, err := b.Note(e.ctx, NoteRequest{Mutation: m, ID: "B", Text: fmt.Sprint("note ", i)})
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(e.dir, CacheDir, CheckpointFile)
	resealCheckpoint(t, path, func(body []byte) []byte {
		at := bytes.Index(body, []byte(`{"card":{"id":"B"`))
		if at < 0 {
			t.Fatal("card B is not in the checkpoint")
		}
		at += len(`{"card":{"id":"B"`)
		return append(body[:at:at], append([]byte("!"), body[at:]...)...)
	})
	before := e.bytes()
	b := e.open()
	defer b.Close()
	got, err := b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "x", TTL: time.Hour})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("the claim answered %v, error %v; want ErrCorrupt", got, err)
	}
	if after := e.bytes(); !bytes.Equal(before, after) {
		t.Fatalf("the claim that failed wrote to the ledger:\n%s", after[len(before):])
	}
}

// resealCheckpoint rewrites the tail checkpoint at path with its body
// edited and its checksums made to hold again. The header is found by its
// own checksum: its last three fields are the body's length and checksum
// and the header's (doc.go, "Tail checkpoint").
func resealCheckpoint(t *testing.T, path string, edit func(body []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	sum := func(b []byte) uint64 { return uint64(crc32.ChecksumIEEE(b)) }
	for n := 8 + 3*8; n <= len(data); n += 8 {
		if le.Uint64(data[n-8:]) != sum(data[:n-8]) || le.Uint64(data[n-24:]) != uint64(len(data)-n) {
			continue
		}
		hdr, body := append([]byte(nil), data[:n]...), edit(append([]byte(nil), data[n:]...))
		le.PutUint64(hdr[n-24:], uint64(len(body)))
		le.PutUint64(hdr[n-16:], sum(body))
		le.PutUint64(hdr[n-8:], sum(hdr[:n-8]))
		if err := os.WriteFile(path, append(hdr, body...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("no checkpoint header found")
}
