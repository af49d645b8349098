package ledger

// Open's normalization and bl doctor --repair rewrite a backlog; whatever
// they rewrite keeps every event its files held.

import (
	"context"
	"os"
	"path/filepath"
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

// TestJournalKeptWhileGitCannotSay: a decided journal is finished only when
// git does not track it (a teammate's force-added one is not this
// clone's). When bl cannot tell (an index it cannot read, no git to ask),
// the change stays staged and the command says so; a later write must not
// clear it, and once git answers the change is finished with its events.
func TestJournalKeptWhileGitCannotSay(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "index"), []byte("not an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".backlog")
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, clk: newClock(), ctx: context.Background()}
	e.b = e.open()
	e.create("A")
	before := e.bytes()
	e.create("B")
	staged := e.bytes()
	b, _ := DecodeLine(staged[len(before):])
	e.b.Close()
	// A crash after the decision: the ledger in place lacks B, the staged
	// one holds it.
	if err := os.WriteFile(filepath.Join(dir, LedgerFile), before, 0o644); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(dir, store.StagingDir)
	if err := os.MkdirAll(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staging, LedgerFile), staged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staging, store.ManifestFile), []byte(`{"write":["ledger.jsonl"],"remove":null}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no git to ask
	acked := false                // C was acknowledged: it must survive too
	if h, err := Open(dir, Options{Clock: e.clk.Now, LockTimeout: time.Second}); err == nil {
		_, _, err = h.Create(e.ctx, CreateRequest{Mutation: m, ID: "C", Title: "c"})
		h.Close()
		acked = err == nil
	}
	if err := os.Remove(filepath.Join(root, ".git", "index")); err != nil { // git can say now: nothing tracked
		t.Fatal(err)
	}
	h, err := Open(dir, Options{Clock: e.clk.Now, LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if ids := allEventIDs(t, dir); !ids[b.ID] {
		t.Fatalf("event %s of the decided journal was lost while git could not say whether it tracks the journal", b.ID)
	}
	if h, err := Open(dir, Options{Clock: e.clk.Now}); err != nil {
		t.Fatal(err)
	} else if _, err := h.Get("C"); acked && err != nil {
		t.Fatalf("card C, acknowledged while the journal waited, is lost: %v", err)
	} else {
		h.Close()
	}
}
