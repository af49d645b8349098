package ledger

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestReviewInodeReuseAtOffsetZero shows that a long-lived handle whose
// ledger position is at offset 0 (just after its own compaction, or opened on
// an empty ledger) cannot tell its ledger from a newer one that reuses the
// inode number: readFrom's tail check only runs when offset > 0, and
// os.SameFile compares nothing but (dev, ino). Another process that claims
// and compacts twice (a filesystem may hand the freed inode number straight
// back to the new ledger.jsonl) makes the handle silently skip every event
// in between, and a claim through it then succeeds against a card someone
// else holds: a double claim.
//
// A handle now keeps its ledger file open from the moment it compacts, so
// the inode number cannot be reused while it compares identities; the test
// checks that a handle at offset 0 sees another process's claim.
func TestReviewInodeReuseAtOffsetZero(t *testing.T) {
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
	if a.pos.file == nil || a.pos.offset != 0 {
		t.Fatalf("the compacting handle does not hold its fresh ledger open (file %v, offset %d)", a.pos.file, a.pos.offset)
	}
	got, err := a.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "c", Owner: "alice", TTL: time.Hour})
	if err == nil && got != nil {
		t.Fatalf("alice was granted %s at epoch %d while bob holds it (the handle skipped bob's claim)", got.ID, got.ClaimEpoch)
	}
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("alice's claim: %v, want ErrConflict (bob holds it)", err)
	}
}

// allEventIDs returns the ids of every event the backlog's files hold.
func allEventIDs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	tr, err := ReadTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := tr.Events()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range evs {
		ids[e.ID] = true
	}
	return ids
}

// TestReviewNormalizeDropsMisorderedLine shows that normalize reads the
// ledger with ReadEvents, whose cursor silently skips any line that is not
// after the line before it. A stale ledger (its first line is not after the
// snapshot: a git merge without the merge driver, resolved by keeping both
// sides) that also holds two lines out of order loses the second of them:
// Open normalizes it away without an error, and bl doctor --repair, which
// reports it as a repairable "order" line, does the same.
func TestReviewNormalizeDropsMisorderedLine(t *testing.T) {
	for _, via := range []string{"open", "repair"} {
		t.Run(via, func(t *testing.T) {
			e := newEnv(t)
			e.create("A")
			e.create("Z")
			old := e.lines()[0] // archived by the compaction below
			if _, err := e.b.Compact(e.ctx); err != nil {
				t.Fatal(err)
			}
			e.create("B")
			e.create("C")
			l := e.lines()
			e1, _ := DecodeLine(l[0])
			// The merged ledger: an already-archived line, then the two new
			// lines swapped.
			e.writeLedger(append(append(append([]byte{}, old...), l[1]...), l[0]...))
			if via == "open" {
				if _, err := Open(e.dir, Options{Clock: e.clk.Now}); err != nil {
					t.Logf("open: %v", err)
				}
			} else if _, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now()); err != nil {
				t.Logf("repair: %v", err)
			}
			if ids := allEventIDs(t, e.dir); !ids[e1.ID] {
				t.Fatalf("event %s (create B) was dropped by normalize; the backlog now holds %d events", e1.ID, len(ids))
			}
		})
	}
}

// TestReviewRepairDiscardsDecidedJournal shows that Repair (bl doctor
// --repair) never finishes a decided journaled tree change: it does not call
// rollForward, and when the backlog looks stale it runs normalize, whose
// writeTree starts with os.RemoveAll(.staging) and so throws the decided
// change away. writeTree's contract is that once MANIFEST is in place the
// change is finished by the next writer or opener; here its events are lost.
func TestReviewRepairDiscardsDecidedJournal(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.create("Z")
	old := e.lines()[0]
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.create("B")
	staged := e.bytes()
	b, _ := DecodeLine(staged)
	// The state a crash leaves: a decided change (MANIFEST written) that
	// would install a ledger holding B, not yet rolled forward; the ledger
	// in place is stale (its first line is already in the snapshot).
	e.writeLedger(old)
	staging := e.dir + "/" + stagingDir
	if err := os.MkdirAll(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staging+"/"+LedgerFile, staged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staging+"/"+manifestFile, []byte(`{"write":["ledger.jsonl"],"remove":null}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(e.dir, Options{Clock: e.clk.Now}); err != nil {
		t.Fatal(err)
	}
	if ids := allEventIDs(t, e.dir); !ids[b.ID] {
		t.Fatalf("event %s of the decided journal was discarded by Repair", b.ID)
	}
}
