package ledger

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

func (e *env) tree() Tree {
	e.t.Helper()
	tr, err := ReadTree(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	return tr
}

// TestRebaseUpstreamWinsTheRace: two clones claim the same card. The one
// whose events reached upstream first keeps it, even though the other
// claimed earlier by the clock; the loser's claim folds as a conflict.
func TestRebaseUpstreamWinsTheRace(t *testing.T) {
	base := seeded(t)
	base.create("R")
	local := cloneOf(t, base)
	up := cloneOf(t, base)
	local.claim("R", "wA", time.Minute) // earlier by the clock, not pushed
	local.create("L1")
	up.clk.Advance(time.Second)
	up.claim("R", "wB", time.Minute) // pushed first

	out, res, err := rebase(up.tree(), local.tree())
	if err != nil {
		t.Fatal(err)
	}
	if res.Local != 2 || res.Restamped != 2 || res.Conflicts != 1 {
		t.Fatalf("result = %+v", res)
	}
	if !strings.HasPrefix(string(out[LedgerFile]), string(up.tree()[LedgerFile])) {
		t.Fatal("upstream's ledger is not a prefix of the result")
	}
	s, err := out.fold(true)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Card("R"); c.ClaimOwner != "wB" || c.ClaimEpoch != 1 {
		t.Fatalf("R = owner %s epoch %d, want wB 1", c.ClaimOwner, c.ClaimEpoch)
	}
	if _, ok := s.Card("L1"); !ok {
		t.Fatal("local-only card lost")
	}
	// Idempotent, and the other side rebasing onto the result gets it
	// byte for byte.
	again, res2, err := rebase(out, out)
	if err != nil || res2.Local != 0 || !again.Equal(out) {
		t.Fatalf("rebase onto itself: %+v %v", res2, err)
	}
	other, res3, err := rebase(out, up.tree())
	if err != nil || res3.Local != 0 || !other.Equal(out) {
		t.Fatalf("upstream side after pull: %+v %v", res3, err)
	}
}

func TestRebaseAcrossCompactions(t *testing.T) {
	base := seeded(t)
	local := cloneOf(t, base)
	up := cloneOf(t, base)
	up.create("U1")
	if _, err := up.b.Compact(up.ctx); err != nil {
		t.Fatal(err)
	}
	up.create("U2")
	local.create("L1")
	if _, err := local.b.Compact(local.ctx); err != nil { // local-only events archived
		t.Fatal(err)
	}
	local.create("L2")
	own := local.tree().archives()

	_, res, err := local.b.ApplyUpstream(local.ctx, up.tree())
	if err != nil {
		t.Fatal(err)
	}
	// The local side had compacted: the result is compacted too. Upstream's
	// segments stay as they are, the local segment (whose events may have
	// been re-stamped) is gone, and one new segment holds the ledger's
	// events: U2 and the local ones after it.
	got, upTree := local.tree(), up.tree()
	if !res.Compacted || len(got[LedgerFile]) != 0 {
		t.Fatalf("result not compacted: %+v, ledger %q", res, got[LedgerFile])
	}
	var added []string
	for _, name := range got.archives() {
		if data, ok := upTree[name]; ok {
			if string(data) != string(got[name]) {
				t.Errorf("upstream segment %s changed", name)
			}
			continue
		}
		if slices.Contains(own, name) {
			t.Errorf("local archive %s survived the rebase", name)
		}
		added = append(added, name)
	}
	if len(added) != 1 {
		t.Fatalf("new segments %v", added)
	}
	evs, err := store.DecodeAll(added[0], got[added[0]])
	if err != nil || len(evs) != 3 || evs[0].Card != "U2" {
		t.Fatalf("new segment holds %d events (%v)", len(evs), err)
	}
	c := local.open()
	for _, id := range []string{"A", "B", "C", "U1", "U2", "L1", "L2"} {
		if _, ok := c.held().Card(id); !ok {
			t.Errorf("card %s missing after rebase", id)
		}
	}
	if n := len(c.held().Conflicts()); n != 0 {
		t.Errorf("%d conflicts", n)
	}
	// History reads every event once.
	local.b = c
	all, _ := local.history(HistoryFilter{Ops: []Op{OpCreate}})
	if len(all) != 7 {
		t.Errorf("history creates = %v", all)
	}
	// The local side keeps working.
	local.create("L3")
}

// TestJournalRollForward: a tree change is all or nothing across a crash.
func TestJournalRollForward(t *testing.T) {
	e := seeded(t)
	before := e.tree()
	staging := filepath.Join(e.dir, store.StagingDir)

	// Undecided: staged files but no manifest. The old backlog stands.
	if err := os.MkdirAll(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(staging, LedgerFile), []byte("garbage\n"), 0o644)
	b := e.open()
	if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: "D", Title: "d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Fatal("undecided staging left behind")
	}

	// Decided: a manifest exists. The next open finishes the change.
	next := e.tree()
	next[LedgerFile] = before[LedgerFile] // as if a rebase dropped D
	os.MkdirAll(staging, 0o755)
	os.WriteFile(filepath.Join(staging, LedgerFile), next[LedgerFile], 0o644)
	os.WriteFile(filepath.Join(staging, store.ManifestFile), []byte(`{"write":["ledger.jsonl"],"remove":[]}`), 0o644)
	c := e.open()
	if _, ok := c.held().Card("D"); ok {
		t.Fatal("the decided change was not rolled forward")
	}
	if !e.tree().Equal(before) {
		t.Fatal("tree after roll forward differs")
	}
}

// TestGitMergeOfCompactedBranches: two branches each append and compact;
// git merges them with MergeFiles for the ledger and keeps one side's
// snapshot. bl notices the snapshot no longer matches, rebuilds it, and the
// backlog holds every event of both branches.
func TestGitMergeOfCompactedBranches(t *testing.T) {
	base := seeded(t)
	ours := cloneOf(t, base)
	theirs := cloneOf(t, base)
	ours.create("O1")
	theirs.clk.Advance(-time.Hour) // their events sort before ours
	theirs.create("T1")
	if _, err := ours.b.Compact(ours.ctx); err != nil {
		t.Fatal(err)
	}
	ours.create("O2")
	if _, err := theirs.b.Compact(theirs.ctx); err != nil {
		t.Fatal(err)
	}
	theirs.create("T2")

	// What git does: archives are new files on each side (both kept),
	// ledger.jsonl goes through the merge driver, snapshot.json keeps ours.
	tt := theirs.tree()
	for name, data := range tt {
		if strings.HasPrefix(name, ArchiveDir+"/") {
			if err := os.WriteFile(filepath.Join(ours.dir, filepath.FromSlash(name)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	merged, err := MergeFiles(base.bytes(), ours.bytes(), tt[LedgerFile])
	if err != nil {
		t.Fatal(err)
	}
	ours.write(merged)

	rep, err := Diagnose(ours.dir, ours.clk.Now())
	if err != nil || rep.Corrupt || len(rep.Damage) != 0 || len(rep.Stale) == 0 || len(rep.Conflicts) != 0 || rep.Cards != 7 {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
	b := ours.open() // normalizes under the lock
	for _, id := range []string{"A", "B", "C", "O1", "O2", "T1", "T2"} {
		if _, ok := b.held().Card(id); !ok {
			t.Errorf("card %s missing after the merge", id)
		}
	}
	if rep, _ := Diagnose(ours.dir, ours.clk.Now()); rep.Corrupt {
		t.Fatalf("still damaged after normalizing: %+v", rep.Damage)
	}
	ours.b = b
	creates, _ := ours.history(HistoryFilter{Ops: []Op{OpCreate}})
	if len(creates) != 7 {
		t.Fatalf("history creates = %v", creates)
	}
	ours.create("O3")
	if c := ours.open(); c.held().Len() != 8 {
		t.Fatalf("%d cards", c.held().Len())
	}
}
