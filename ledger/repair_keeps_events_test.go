package ledger

// Open's normalization and bl doctor --repair rewrite a backlog; whatever
// they rewrite keeps every event its files held.

import (
	"os"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

// TestNormalizeKeepsMisorderedLines: a stale ledger (its first line is not
// after the snapshot: a git merge without the merge driver, resolved by
// keeping both sides) that also holds two lines out of order keeps both of
// them through Open, which normalizes it, and through bl doctor --repair,
// which reports the second as a repairable "order" line. Reading it with a
// cursor, which passes over any line not after the one before it, would
// drop the second line without an error.
func TestNormalizeKeepsMisorderedLines(t *testing.T) {
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

// TestRepairFinishesDecidedJournal: once a journaled tree change is
// decided (MANIFEST in place), the next writer or opener finishes it, and
// so does Repair (bl doctor --repair), also when the backlog looks stale
// and Repair normalizes it: normalize's writeTree starts by clearing
// .staging/, which would throw the decided change and its events away.
func TestRepairFinishesDecidedJournal(t *testing.T) {
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
	staging := e.dir + "/" + store.StagingDir
	if err := os.MkdirAll(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staging+"/"+LedgerFile, staged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staging+"/"+store.ManifestFile, []byte(`{"write":["ledger.jsonl"],"remove":null}`), 0o644); err != nil {
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
