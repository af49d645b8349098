package gitsync

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

func compact(t *testing.T, b *ledger.Backlog) {
	t.Helper()
	if _, err := b.Compact(bg); err != nil {
		t.Fatal(err)
	}
}

func push(t *testing.T, s *Syncer) Result {
	t.Helper()
	res, err := s.Push(bg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// remoteFiles lists the backlog files on the bare remote's main branch.
func (w *world) remoteFiles() []string {
	w.t.Helper()
	return strings.Fields(w.git(w.bare, "ls-tree", "-r", "--name-only", "main", "--", ".backlog"))
}

func (w *world) remoteFile(name string) string {
	w.t.Helper()
	return w.git(w.bare, "show", "main:.backlog/"+name)
}

// freshClone is a plain git clone of the remote, without bl init: the
// backlog as git checks it out.
func (w *world) freshClone(name string) *ledger.Backlog {
	w.t.Helper()
	dir := filepath.Join(w.root, name)
	w.git(w.root, "clone", "-q", w.bare, dir)
	return open(w.t, dir)
}

func fullTree(t *testing.T, b *ledger.Backlog) ledger.Tree {
	t.Helper()
	tr, err := b.Tree(bg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestSyncCarriesLocalCompaction: a compaction made in a clone reaches the
// remote as a snapshot and an archive segment that fold to the same state,
// the remote's ledger is emptied, and a fresh clone reads that state
// without compacting or normalizing anything.
func TestSyncCarriesLocalCompaction(t *testing.T) {
	w := newWorld(t)
	a := open(t, w.clone("a"))
	sa := syncer(t, a, Options{Remote: "origin"})
	create(t, a, "alice", "A1", "A2", "A3")
	push(t, sa)
	if got := strings.Count(w.remoteFile(ledger.LedgerFile), "\n"); got != 3 {
		t.Fatalf("remote ledger holds %d events", got)
	}
	create(t, a, "alice", "A4")
	compact(t, a)
	create(t, a, "alice", "A5") // a tail after the compaction
	if res := push(t, sa); !res.Pushed || res.Rebased != 2 {
		t.Fatalf("push: %+v", res)
	}
	files := w.remoteFiles()
	var segments []string
	for _, f := range files {
		if strings.HasPrefix(f, ".backlog/archive/") {
			segments = append(segments, f)
		}
	}
	if !slices.Contains(files, ".backlog/snapshot.json") || len(segments) != 1 {
		t.Fatalf("remote holds %v", files)
	}
	if led := w.remoteFile(ledger.LedgerFile); led != "" {
		t.Fatalf("remote ledger still holds:\n%s", led)
	}
	// The local files are the remote's.
	if got := w.git(w.bare, "show", "main:"+segments[0]); got != string(fullTree(t, a)[strings.TrimPrefix(segments[0], ".backlog/")]) {
		t.Fatal("the local segment differs from the remote's")
	}
	c := w.freshClone("c")
	if cards(t, c) != cards(t, a) {
		t.Fatalf("fresh clone reads\n%s\nthe clone that pushed\n%s", cards(t, c), cards(t, a))
	}
	// The next writer on the fresh clone only appends: the snapshot
	// matches the segments, so nothing is compacted or normalized.
	before := fullTree(t, c)
	create(t, c, "carol", "C1")
	after := fullTree(t, c)
	for name, data := range before {
		if name != ledger.LedgerFile && string(after[name]) != string(data) {
			t.Errorf("%s changed on the fresh clone's first write", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("files %d → %d on the fresh clone's first write", len(before), len(after))
	}
}

// TestSyncBothSidesCompacted: two clones compact their own events, then
// both sync. Every event is kept once, and every clone, and a fresh one,
// ends with the same files and the same state.
func TestSyncBothSidesCompacted(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin"}), syncer(t, b, Options{Remote: "origin"})
	create(t, a, "alice", "S1", "S2")
	push(t, sa)
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	create(t, a, "alice", "A1")
	compact(t, a)
	create(t, a, "alice", "A2")
	create(t, b, "bob", "B1")
	compact(t, b)
	create(t, b, "bob", "B2")
	claimOf(t, b, "bob", "S1")
	compact(t, b)

	push(t, sa)
	if res := push(t, sb); res.Rebased != 3 || res.Pulled != 2 {
		t.Fatalf("bob's push: %+v", res)
	}
	if res, err := sa.Pull(bg); err != nil || res.Pulled != 3 {
		t.Fatalf("alice's pull: %+v %v", res, err)
	}
	if led := w.remoteFile(ledger.LedgerFile); led != "" {
		t.Fatalf("remote ledger still holds:\n%s", led)
	}
	ta, tb := fullTree(t, a), fullTree(t, b)
	if !ta.Equal(tb) {
		t.Fatal("the clones' files differ")
	}
	if ids := treeIDs(t, ta); len(ids) != 7 {
		t.Fatalf("%d events, want 7", len(ids))
	}
	c := w.freshClone("c")
	want := "A1 ready #0 v1\nA2 ready #0 v1\nB1 ready #0 v1\nB2 ready #0 v1\nS1 claimed bob#1 v2\nS2 ready #0 v1\n"
	for name, bk := range map[string]*ledger.Backlog{"a": a, "b": b, "fresh": c} {
		if got := cards(t, bk); got != want {
			t.Errorf("%s reads\n%s", name, got)
		}
	}
}

func claimOf(t *testing.T, b *ledger.Backlog, owner, id string) {
	t.Helper()
	if _, err := b.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, Owner: owner, ID: id, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// TestRemoteLedgerStaysShort: clones that write and sync round after
// round keep the remote's ledger within the compaction threshold (plus
// one round's events): the compactions they make reach the remote.
// Each side compacts every third round, so 8 rounds make 5 compactions,
// both sides' in turn; without them the remote's ledger would pass the
// bound by the fourth round.
func TestRemoteLedgerStaysShort(t *testing.T) {
	const rounds = 8
	const threshold = 2048
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	cfg := `{"version":1,"compact_bytes":2048}` + "\n"
	for _, d := range []string{da, db} {
		if err := os.WriteFile(filepath.Join(d, ".backlog", ledger.ConfigFile), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin"}), syncer(t, b, Options{Remote: "origin"})
	create(t, a, "alice", "seed")
	push(t, sa)
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	most := 0
	for round := range rounds {
		for _, side := range []struct {
			b    *ledger.Backlog
			s    *Syncer
			name string
		}{{a, sa, "a"}, {b, sb, "b"}} {
			for i := range 3 {
				create(t, side.b, side.name, side.name+"-"+string(rune('a'+round))+string(rune('0'+i)))
			}
			push(t, side.s)
			most = max(most, len(w.remoteFile(ledger.LedgerFile)))
		}
	}
	if most > threshold+1500 {
		t.Fatalf("the remote's ledger grew to %d bytes (threshold %d)", most, threshold)
	}
	if _, err := sa.Pull(bg); err != nil {
		t.Fatal(err)
	}
	ta, tb := fullTree(t, a), fullTree(t, b)
	if !ta.Equal(tb) {
		t.Fatal("the clones' files differ")
	}
	if ids := treeIDs(t, ta); len(ids) != 1+rounds*2*3 {
		t.Fatalf("%d events", len(ids))
	}
	if cards(t, w.freshClone("c")) != cards(t, a) {
		t.Fatal("a fresh clone reads another state")
	}
}

// poison overwrites the archive segments of the backlog in dir with
// bytes that are no events, keeping each file's size and modification
// time, and returns how to put them back. Whatever reads a poisoned
// segment fails or folds the wrong state.
func poison(t *testing.T, dir string) (restore func()) {
	t.Helper()
	seg := filepath.Join(dir, ".backlog", ledger.ArchiveDir)
	entries, err := os.ReadDir(seg)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no segments in %s: %v", seg, err)
	}
	var undo []func()
	for _, e := range entries {
		p := filepath.Join(seg, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		junk := []byte(strings.Repeat("x", len(data)-1) + "\n")
		if err := os.WriteFile(p, junk, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		undo = append(undo, func() {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		})
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// TestSyncRoundWorkIsBounded: once two clones share their history, a
// round with new events reads no archive segment and no snapshot at all —
// from git or from disk — and a round after a compaction reads only the
// new segment and the new snapshot.
// The segments both clones hold are poisoned (same size and time, other
// bytes) while the rounds run: anything that read or decoded one would
// fail or fold another state.
func TestSyncRoundWorkIsBounded(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin"}), syncer(t, b, Options{Remote: "origin"})
	var history []string
	for i := range 40 {
		history = append(history, "H"+string(rune('A'+i/26))+string(rune('a'+i%26)))
	}
	create(t, a, "alice", history[:20]...)
	compact(t, a)
	create(t, a, "alice", history[20:]...)
	compact(t, a)
	push(t, sa)
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	// One ordinary round each: the clones learn the segments' hashes.
	create(t, b, "bob", "W1")
	push(t, sb)
	create(t, a, "alice", "W2")
	push(t, sa)

	var reads []string
	traceRead = func(kind, name string) { reads = append(reads, kind+" "+name) }
	defer func() { traceRead = nil }()
	restoreA, restoreB := poison(t, da), poison(t, db)
	create(t, b, "bob", "N1")
	push(t, sb)
	create(t, a, "alice", "N2")
	push(t, sa)
	card, _, err := sb.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "bob"}, Owner: "bob", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatalf("remote claim: %v %v", card, err)
	}
	if _, err := sa.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if len(reads) != 0 {
		t.Fatalf("rounds with new events read segments: %v", reads)
	}
	restoreA()
	restoreB()

	// A compaction on one side: the round reads the new segment only.
	old := map[string]bool{}
	for name := range fullTree(t, b) {
		old[name] = true
	}
	restoreA, restoreB = poison(t, da), poison(t, db)
	create(t, a, "alice", "N3")
	compact(t, a)
	push(t, sa)
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	restoreA()
	restoreB()
	var fresh []string
	for name := range fullTree(t, b) {
		if strings.HasPrefix(name, ledger.ArchiveDir+"/") && !old[name] {
			fresh = append(fresh, name)
		}
	}
	if len(fresh) != 1 {
		t.Fatalf("new segments after the compaction: %v", fresh)
	}
	for _, r := range reads {
		if !strings.HasSuffix(r, " "+fresh[0]) && !strings.HasSuffix(r, " "+ledger.SnapshotFile) {
			t.Errorf("read %s; only the new segment %s and the new snapshot should be", r, fresh[0])
		}
	}
	if ta, tb := fullTree(t, a), fullTree(t, b); !ta.Equal(tb) {
		t.Fatal("the clones' files differ")
	}
	if cards(t, a) != cards(t, b) || cards(t, w.freshClone("c")) != cards(t, a) {
		t.Fatal("the clones read different states")
	}
}

// TestSyncAfterGitUnionMerges: both clones compact, and one merges the
// other's compaction with plain git (merge=union: two snapshots' lines in
// one file, a stale snapshot) and pushes it with git. A bl sync from the
// other clone, whose own snapshot matches, reads that remote right; then
// the same happens the other way round, with the stale snapshot on the
// syncing side. Every event is kept once and every clone ends in the
// same state as a fresh clone.
func TestSyncAfterGitUnionMerges(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin"}), syncer(t, b, Options{Remote: "origin"})
	create(t, a, "alice", "S1", "S2")
	compact(t, a)
	push(t, sa)
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}

	// Upstream stale: bob merges alice's compaction with git and pushes.
	create(t, a, "alice", "A1")
	compact(t, a)
	push(t, sa)
	create(t, b, "bob", "B1")
	compact(t, b)
	if _, err := sb.Commit(bg); err != nil {
		t.Fatal(err)
	}
	w.git(db, "pull", "-q", "--no-rebase", "origin", "main")
	if heads := strings.Count(w.git(db, "show", "HEAD:.backlog/snapshot.json"), `{"v":`); heads != 2 {
		t.Fatalf("git's merge left %d snapshot headers, want a union of 2", heads)
	}
	w.git(db, "push", "-q", "origin", "main")
	create(t, a, "alice", "A2")
	push(t, sa)

	// Local stale: bob compacts again, merges alice's push with git, and
	// syncs with bl.
	b = open(t, db)
	sb = syncer(t, b, Options{Remote: "origin"})
	create(t, b, "bob", "B2")
	compact(t, b)
	if _, err := sb.Commit(bg); err != nil {
		t.Fatal(err)
	}
	create(t, a, "alice", "A3")
	compact(t, a)
	push(t, sa)
	w.git(db, "pull", "-q", "--no-rebase", "origin", "main")
	b = open(t, db)
	sb = syncer(t, b, Options{Remote: "origin"})
	create(t, b, "bob", "B3")
	push(t, sb)
	if _, err := sa.Pull(bg); err != nil {
		t.Fatal(err)
	}

	want := "A1 ready #0 v1\nA2 ready #0 v1\nA3 ready #0 v1\nB1 ready #0 v1\nB2 ready #0 v1\nB3 ready #0 v1\nS1 ready #0 v1\nS2 ready #0 v1\n"
	c := w.freshClone("c")
	for name, bk := range map[string]*ledger.Backlog{"a": a, "b": b, "fresh": c} {
		if got := cards(t, bk); got != want {
			t.Errorf("%s reads\n%s", name, got)
		}
		if ids := treeIDs(t, fullTree(t, bk)); len(ids) != 8 {
			t.Errorf("%s: %d events, want 8", name, len(ids))
		}
	}
	if ta, tb := fullTree(t, a), fullTree(t, b); !ta.Equal(tb) {
		t.Error("the clones' files differ")
	}
}

// TestSegmentHashCache: a segment's blob hash is taken from
// cache/blobs.json only while the file's size and time are the ones
// recorded; a touched segment or a damaged cache costs one read, never a
// wrong commit.
func TestSegmentHashCache(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	sa := syncer(t, a, Options{Remote: "origin"})
	create(t, a, "alice", "A1", "A2")
	compact(t, a)
	push(t, sa)
	var reads []string
	traceRead = func(kind, name string) { reads = append(reads, kind+" "+name) }
	defer func() { traceRead = nil }()
	n := 0
	round := func() {
		t.Helper()
		reads, n = nil, n+1
		create(t, a, "alice", "X"+string(rune('a'+n)))
		push(t, sa)
		if st := w.git(da, "status", "--porcelain", "--", ".backlog"); st != "" {
			t.Fatalf("git status:\n%s", st)
		}
	}
	round()
	if len(reads) != 0 {
		t.Fatalf("a round with the cache read %v", reads)
	}
	seg := filepath.Join(da, ".backlog", ledger.ArchiveDir)
	entries, _ := os.ReadDir(seg)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(seg, entries[0].Name()), later, later); err != nil {
		t.Fatal(err)
	}
	round()
	if len(reads) != 1 || !strings.HasPrefix(reads[0], "file ") {
		t.Fatalf("a touched segment: reads %v", reads)
	}
	round()
	if len(reads) != 0 {
		t.Fatalf("after re-reading it: %v", reads)
	}
	if err := os.WriteFile(filepath.Join(da, ".backlog", filepath.FromSlash(blobsFile)), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	sa = syncer(t, a, Options{Remote: "origin"}) // a new process reads the cache
	round()
	if len(reads) != 2 { // the segment and the snapshot, once each
		t.Fatalf("a damaged cache: reads %v", reads)
	}
	if cards(t, w.freshClone("c")) != cards(t, a) {
		t.Fatal("a fresh clone reads another state")
	}
}
