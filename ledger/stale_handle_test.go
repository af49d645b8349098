package ledger

// A long-lived handle (a watcher, a supervisor, a test) must notice what
// other processes, syncs and git pulls did to the backlog under it.

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

// TestHandleAtOffsetZeroSeesAnotherProcessesClaim: a long-lived handle at
// offset 0 of its ledger (just after its own compaction, or opened on an
// empty ledger) must tell its ledger from a newer one. os.SameFile compares
// only (dev, ino), and a filesystem may hand a freed inode number straight
// back to the next ledger.jsonl, so after another process claims and
// compacts twice the handle would skip every event in between and grant a
// second claim of a card someone holds. A handle keeps its ledger file open
// from the moment it compacts, so the number cannot be reused while it
// compares; a handle at offset 0 sees another process's claim.
func TestHandleAtOffsetZeroSeesAnotherProcessesClaim(t *testing.T) {
	e := newEnv(t)
	e.create("c")
	a := e.b
	if _, err := a.Compact(e.ctx); err != nil { // a is now at offset 0
		t.Fatal(err)
	}
	b := e.open()
	if _, err := b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "c", Owner: "bob", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	if open, offset := a.st.Held(); !open || offset != 0 {
		t.Fatalf("the compacting handle does not hold its fresh ledger open (open %v, offset %d)", open, offset)
	}
	got, err := a.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "c", Owner: "alice", TTL: time.Hour})
	if err == nil && got != nil {
		t.Fatalf("alice was granted %s at epoch %d while bob holds it (the handle skipped bob's claim)", got.ID, got.ClaimEpoch)
	}
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("alice's claim: %v, want ErrConflict (bob holds it)", err)
	}
}

// TestHandleSeesSnapshotReplacedUnderUnchangedLedger: a sync
// (ApplyUpstream) or a git pull can bring in a newer snapshot and archive
// segments while ledger.jsonl keeps its bytes: when both sides had just
// compacted, both ledgers are empty, so writeTree skips the ledger and git
// leaves it alone. Another handle on the backlog must still answer from the
// new snapshot: see upstream's new card, and refuse a claim of a card
// upstream completed rather than acknowledge one that then folds as a
// conflict. Not specific to the index: a handle that loaded the snapshot
// whole must do the same.
func TestHandleSeesSnapshotReplacedUnderUnchangedLedger(t *testing.T) {
	for _, via := range []string{"sync", "git pull"} {
		t.Run(via, func(t *testing.T) {
			base := seeded(t) // A claimed by w1 for a minute, B waits on A, C done
			local := cloneOf(t, base)
			up := cloneOf(t, base)
			for _, e := range []*env{local, up} {
				if _, err := e.b.Compact(e.ctx); err != nil {
					t.Fatal(err)
				}
			}
			up.create("U1")
			if _, err := up.b.Complete(up.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := up.b.Compact(up.ctx); err != nil {
				t.Fatal(err)
			}
			other := local.open() // another process with the backlog open
			defer other.Close()
			before, _ := os.Stat(local.ledgerPath())
			switch via {
			case "sync":
				if _, _, err := local.b.ApplyUpstream(local.ctx, up.tree()); err != nil {
					t.Fatal(err)
				}
			case "git pull":
				// git writes each changed file anew and leaves the
				// unchanged ledger alone.
				for name, data := range up.tree() {
					if old, ok := local.tree()[name]; ok && string(old) == string(data) {
						continue
					}
					path := filepath.Join(local.dir, filepath.FromSlash(name))
					os.Remove(path)
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if after, _ := os.Stat(local.ledgerPath()); !os.SameFile(before, after) {
				t.Fatal("setup: the ledger file was replaced")
			}
			fresh := local.open()
			defer fresh.Close()
			if _, err := fresh.Get("U1"); err != nil {
				t.Fatalf("setup: a handle opened now does not see upstream's card: %v", err)
			}
			if _, err := other.Get("U1"); err != nil {
				t.Errorf("after the snapshot was replaced: %v", err)
			}
			// A is done upstream; the other handle still sees w1's lease,
			// and once it has run out, takes the card.
			local.clk.Advance(2 * time.Minute)
			if c, err := other.Claim(local.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: "w2", TTL: time.Minute}); err == nil {
				s := foldHistory(t, local.dir)
				a, _ := s.Card("A")
				t.Errorf("a claim of done card A was acknowledged (epoch %d); the fold has A %s with %d conflict(s)", c.ClaimEpoch, a.Status, len(s.Conflicts()))
			}
		})
	}
}

// TestHandleFallsBackWhenItsIndexPointsElsewhere: a handle opened through
// an index that points at the wrong lines works until another process
// appends an event about a card it has not read yet. Folding that event in
// (catchUp) cannot read the card through the index; the snapshot source
// then reads the whole snapshot, and does not fail with the CorruptError: a
// stale or damaged index costs one full load, never a failed call.
func TestHandleFallsBackWhenItsIndexPointsElsewhere(t *testing.T) {
	dir, _ := indexedEnv(t)
	swapIndexedCards(t, dir)
	clk := newClock()
	open := func() *Backlog {
		b, err := Open(dir, Options{Clock: clk.Now, LockTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	h, h2 := open(), open()
	if !isLazy(h) || !isLazy(h2) {
		t.Fatal("the forged index was not used")
	}
	// Another process writes about card A, whose line the forged index
	// misplaces; it falls back to the whole snapshot and succeeds.
	other := open()
	if _, err := other.Update(context.Background(), UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Phase: ptr("P7")}}); err != nil {
		t.Fatal(err)
	}
	// h reads a card the event does not touch; h2 writes one.
	if _, err := h.Get("C"); err != nil {
		t.Errorf("read after another process's write: %v", err)
	}
	if _, err := h2.Update(context.Background(), UpdateRequest{Mutation: m, ID: "C", Fields: Fields{Phase: ptr("P9")}}); err != nil {
		t.Errorf("write after another process's write: %v", err)
	}
}

// swapIndexedCards rewrites the cached index of dir so that the line
// ranges of its first two cards are swapped, with a correct checksum: an
// index that matches the snapshot but points at the wrong lines.
func swapIndexedCards(t *testing.T, dir string) {
	t.Helper()
	index := filepath.Join(dir, CacheDir, IndexFile)
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if nc := int(binary.LittleEndian.Uint32(data[28:])); nc < 2 {
		t.Fatalf("want at least two cards, have %d", nc)
	}
	e0 := data[store.IndexHeaderLen : store.IndexHeaderLen+store.EntryLen]
	e1 := data[store.IndexHeaderLen+store.EntryLen : store.IndexHeaderLen+2*store.EntryLen]
	var tmp [12]byte
	copy(tmp[:], e0[8:20])
	copy(e0[8:20], e1[8:20])
	copy(e1[8:20], tmp[:])
	data = resealIndex(data)
	if err := os.WriteFile(index, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func isLazy(b *Backlog) bool {
	return b.held().Source() != nil
}
