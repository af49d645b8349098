package ledger

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// fullDisk makes store.ReplaceAtomic fail with ENOSPC for the files step
// matches, as a full disk does, until the returned function frees it.
// With after set the file is replaced first and the error comes after (the
// fsync of the directory failed): the step took effect but reports failure.
// Failing before, it leaves a temp file behind, as a process killed
// mid-write would.
func fullDisk(t *testing.T, step func(path string) bool, after bool) (free func()) {
	t.Helper()
	streamThroughAtomic(t)
	prev := store.ReplaceAtomic
	store.ReplaceAtomic = func(path string, data []byte, mid func()) error {
		if !step(path) {
			return prev(path, data, mid)
		}
		if after {
			if err := prev(path, data, mid); err != nil {
				return err
			}
		} else {
			tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-424242")
			_ = os.WriteFile(tmp, data[:len(data)/2], 0o644)
		}
		return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	freed := false
	free = func() {
		if !freed {
			store.ReplaceAtomic = prev
			freed = true
		}
	}
	t.Cleanup(free)
	return free
}

var compactionSteps = map[string]func(path string) bool{
	"archive":  func(p string) bool { return filepath.Base(filepath.Dir(p)) == ArchiveDir },
	"snapshot": func(p string) bool { return filepath.Base(p) == SnapshotFile },
	"index":    func(p string) bool { return filepath.Base(p) == IndexFile },
	"ledger":   func(p string) bool { return filepath.Base(p) == LedgerFile },
	"all":      func(string) bool { return true },
}

// compactedWithTail is a backlog with a snapshot, an archive segment and
// ledger events after them; automatic compaction is off.
func compactedWithTail(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	noCompaction(e)
	for _, id := range []string{"A", "B", "C"} {
		e.create(id)
	}
	e.claim("A", "w1", time.Hour)
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	e.create("D", func(r *CreateRequest) { r.DependsOn = []string{"C"}; r.IdempotencyKey = "k-d" })
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: rid("done-a"), ID: "A", Owner: "w1", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	return e
}

// leftovers lists what a compaction may leave behind: temp files (when
// temps is set), a journal's staging directory, archive segments the
// snapshot does not fold.
func leftovers(t *testing.T, dir string, temps bool) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && ((temps && strings.Contains(fi.Name(), ".tmp-")) || fi.Name() == store.StagingDir) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	hdr, err := store.ReadSnapshotHeader(dir)
	if err != nil {
		t.Fatal(err)
	}
	names, err := store.ArchiveNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !store.NamesMatch(names, hdr) {
		out = append(out, fmt.Sprintf("archive set %v not the snapshot's", names))
	}
	return out
}

// works runs list, show, ready, create and claim on b and returns what
// failed.
func works(e *env, b *Backlog, tag string) []string {
	var bad []string
	note := func(what string, err error) {
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", what, err))
		}
	}
	_, err := b.List(Filter{}, SortID)
	note("list", err)
	_, err = b.Get("D")
	note("show", err)
	_, err = b.Ready(Filter{})
	note("ready", err)
	_, _, err = b.Create(e.ctx, CreateRequest{Mutation: m, ID: "new-" + tag, Title: tag, DependsOn: []string{"A"}})
	note("create", err)
	c, err := b.Claim(e.ctx, ClaimRequest{Mutation: m, Owner: "w-" + tag, ID: "new-" + tag, TTL: time.Minute})
	if err == nil && c == nil {
		err = fmt.Errorf("nothing claimed")
	}
	note("claim", err)
	return bad
}

// TestCompactionOnFullDisk fails each step of a compaction with ENOSPC,
// before or after it takes effect, with the disk staying full afterwards.
// The backlog must read and write as before (the state is unchanged, list,
// show, ready, create and claim work on the handle that compacted and on a
// new one, nothing is rebuilt into .staging), and once the disk is freed
// the next compaction succeeds and leaves nothing behind.
func TestCompactionOnFullDisk(t *testing.T) {
	for step, match := range compactionSteps {
		for _, after := range []bool{false, true} {
			name := fmt.Sprintf("%s/before", step)
			if after {
				name = fmt.Sprintf("%s/after", step)
			}
			t.Run(name, func(t *testing.T) {
				e := compactedWithTail(t)
				want := e.foldedJSON()
				free := fullDisk(t, match, after)
				_, err := e.b.Compact(e.ctx)
				if step == "index" && err != nil {
					t.Fatalf("the index is a cache; compaction failed: %v", err)
				}
				if step != "index" && !after && err == nil {
					t.Fatal("compaction reported success")
				}
				if err != nil && !strings.Contains(err.Error(), "no event was lost") {
					t.Errorf("the error does not say what to do: %v", err)
				}
				// Only temp files may be left (a killed process's; the
				// next compaction removes them).
				if left := leftovers(t, e.dir, false); len(left) > 0 {
					t.Fatalf("left behind by the failed compaction: %v", left)
				}
				// The disk stays full: everything that writes through
				// store.ReplaceAtomic fails from here on.
				free()
				full := fullDisk(t, func(string) bool { return true }, false)
				if got := e.foldedJSON(); got != want {
					t.Fatalf("state after the failed compaction differs:\n got %s\nwant %s", got, want)
				}
				if _, err := os.Stat(filepath.Join(e.dir, store.StagingDir)); err == nil {
					t.Fatal("a .staging directory was written")
				}
				if bad := works(e, e.b, "same"); len(bad) > 0 {
					t.Fatalf("on the handle that compacted: %v", bad)
				}
				other := e.open()
				defer other.Close()
				if bad := works(e, other, "other"); len(bad) > 0 {
					t.Fatalf("on a new handle: %v", bad)
				}
				full()
				// The disk is freed: the next compaction cleans up.
				want = e.foldedJSON()
				if _, err := e.open().Compact(e.ctx); err != nil {
					t.Fatalf("compaction after freeing the disk: %v", err)
				}
				if got := e.foldedJSON(); got != want {
					t.Fatal("state changed by the compaction after freeing the disk")
				}
				if left := leftovers(t, e.dir, true); len(left) > 0 {
					t.Fatalf("left behind: %v", left)
				}
				if evs := readEvents(t, e.ledgerPath()); len(evs) != 0 {
					t.Fatalf("%d events still in the ledger", len(evs))
				}
			})
		}
	}
}

// killedCompaction leaves what a compaction killed between its archive
// segment and its snapshot leaves: the segment (the ledger's events after
// the snapshot, byte for byte) and temp files.
func killedCompaction(t *testing.T, e *env) string {
	t.Helper()
	hdr, err := store.ReadSnapshotHeader(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	led, err := os.Open(filepath.Join(e.dir, LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	covered, _, err := store.CoveredPrefix(led, hdr)
	if err != nil {
		t.Fatal(err)
	}
	segment := e.bytes()[covered:]
	name := store.ArchiveName(*e.lastEvent())
	if err := os.WriteFile(filepath.Join(e.dir, name), segment, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tmp := range []string{".snapshot.json.tmp-1", filepath.Join(ArchiveDir, ".x.jsonl.tmp-2"), filepath.Join(CacheDir, ".snapshot.idx.tmp-3")} {
		if err := os.WriteFile(filepath.Join(e.dir, tmp), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// TestKilledCompactionLeftover: the segment a killed compaction left is not
// a disagreement to rewrite: loads ignore it (its events are all in the
// ledger), writes go on, and the next compaction removes it and the temp
// files.
func TestKilledCompactionLeftover(t *testing.T) {
	e := compactedWithTail(t)
	want := e.foldedJSON()
	name := killedCompaction(t, e)
	full := fullDisk(t, func(string) bool { return true }, false)
	if got := e.foldedJSON(); got != want {
		t.Fatalf("state with the leftover segment differs:\n got %s\nwant %s", got, want)
	}
	if bad := works(e, e.open(), "x"); len(bad) > 0 {
		t.Fatal(bad)
	}
	if _, err := os.Stat(filepath.Join(e.dir, name)); err != nil {
		t.Fatalf("the leftover was touched by a load: %v", err)
	}
	if rep, err := Diagnose(e.dir, time.Now()); err != nil || rep.Corrupt || rep.Leftover != filepath.ToSlash(name) {
		t.Fatalf("doctor: leftover %q (want %q), corrupt %v, %v", rep.Leftover, name, rep.Corrupt, err)
	}
	full()
	want = e.foldedJSON()
	if _, err := e.open().Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.foldedJSON(); got != want {
		t.Fatal("state changed by the compaction")
	}
	if left := leftovers(t, e.dir, true); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
	if rep, err := Diagnose(e.dir, time.Now()); err != nil || rep.Leftover != "" {
		t.Fatalf("doctor after the compaction: leftover %q, %v", rep.Leftover, err)
	}
	names, _ := store.ArchiveNames(e.dir)
	if slices.Contains(names, filepath.ToSlash(name)) {
		t.Fatalf("the leftover %s is still there: %v", name, names)
	}
}

// TestReadOnlyAfterFailedCompaction: with the backlog on a file system
// that refuses every replacement (EROFS through the store.ReplaceAtomic seam, so
// the test runs as root too) after a compaction failed and one was killed,
// list, show and ready still answer, and no file changes: a reader never
// needs to write.
func TestReadOnlyAfterFailedCompaction(t *testing.T) {
	e := compactedWithTail(t)
	want := e.foldedJSON()
	free := fullDisk(t, compactionSteps["snapshot"], false)
	if _, err := e.b.Compact(e.ctx); err == nil {
		t.Fatal("compaction reported success")
	}
	free()
	// Nothing opens the backlog from here until it is read-only: a load
	// that rewrote what it found would hide what this test is about.
	killedCompaction(t, e)
	// Without its index the snapshot is read whole, and the reader tries
	// to cache an index: that write fails, the read must not.
	if err := os.Remove(filepath.Join(e.dir, CacheDir, IndexFile)); err != nil {
		t.Fatal(err)
	}
	readOnlyFS(t)
	before := treeState(t, e.dir)
	b, err := Open(e.dir, Options{Clock: e.clk.Now})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer b.Close()
	if _, err := b.List(Filter{}, SortID); err != nil {
		t.Errorf("list: %v", err)
	}
	if c, err := b.Get("D"); err != nil || c.ID != "D" {
		t.Errorf("show: %v", err)
	}
	if r, err := b.Ready(Filter{}); err != nil || len(r) == 0 {
		t.Errorf("ready: %v %v", r, err)
	}
	var got string
	if err := b.view(func(s *fold.State, _ time.Time) error { got = foldedJSON(t, s); return nil }); err != nil || got != want {
		t.Errorf("state in a read-only backlog: %v (differs: %v)", err, got != want)
	}
	after := treeState(t, e.dir)
	for name := range joinKeys(before, after) {
		if before[name] != after[name] {
			t.Errorf("a reader changed %s: %q, then %q", name, before[name], after[name])
		}
	}
}

// readOnlyFS makes every replacement through store.ReplaceAtomic fail as on a
// read-only file system, until the test ends.
func readOnlyFS(t *testing.T) {
	t.Helper()
	streamThroughAtomic(t)
	prev := store.ReplaceAtomic
	store.ReplaceAtomic = func(path string, _ []byte, _ func()) error {
		return &os.PathError{Op: "replace", Path: path, Err: syscall.EROFS}
	}
	t.Cleanup(func() { store.ReplaceAtomic = prev })
}

// joinKeys is the set of the keys of a and b.
func joinKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range maps.Keys(a) {
		out[k] = true
	}
	for k := range maps.Keys(b) {
		out[k] = true
	}
	return out
}

// treeState is every file and directory under dir with its size and
// modification time.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReaderAnswersStaleBacklogInMemory: a backlog whose files disagree (an
// archive segment merged in by git that the snapshot does not fold) is
// answered by readers from its normal form in memory, without writing,
// even when nothing can be written; the next writer rewrites it.
func TestReaderAnswersStaleBacklogInMemory(t *testing.T) {
	e := compactedWithTail(t)
	// Another clone's history: an event this one has not seen, archived
	// there.
	other := t.TempDir()
	copyDir(t, e.dir, other)
	ob, err := Open(other, Options{Clock: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	if _, _, err := ob.Create(e.ctx, CreateRequest{Mutation: m, ID: "Z", Title: "from elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	ob.Close()
	names, _ := store.ArchiveNames(other)
	mine, _ := store.ArchiveNames(e.dir)
	for _, n := range names {
		if !slices.Contains(mine, n) {
			data, err := os.ReadFile(filepath.Join(other, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(e.dir, n), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, _ := ReadTree(e.dir)
	full := fullDisk(t, func(string) bool { return true }, false)
	r := e.open()
	if _, err := r.Get("Z"); err != nil {
		t.Fatalf("the merged-in card: %v", err)
	}
	if _, err := r.Get("D"); err != nil {
		t.Fatalf("a local card: %v", err)
	}
	r.Close()
	if after, _ := ReadTree(e.dir); !after.Equal(before) {
		t.Fatal("a reader rewrote the backlog")
	}
	// A writer cannot rewrite the files either: it says so and appends.
	var warned []string
	w0, err := Open(e.dir, Options{Clock: e.clk.Now, Warn: func(msg string) { warned = append(warned, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w0.Update(e.ctx, UpdateRequest{Mutation: m, ID: "Z", Fields: Fields{Body: ptr("written on a full disk")}}); err != nil {
		t.Fatalf("a write while the files cannot be rewritten: %v", err)
	}
	w0.Close()
	if len(warned) == 0 || !strings.Contains(warned[0], "normal form") {
		t.Errorf("warnings: %q", warned)
	}
	if _, err := os.Stat(filepath.Join(e.dir, store.StagingDir)); err == nil {
		t.Error("the failed rewrite left .staging behind")
	}
	if c, err := e.open().Get("Z"); err != nil || c.Body != "written on a full disk" {
		t.Fatalf("after the write: %+v %v", c, err)
	}
	full()
	w := e.open()
	if _, err := w.Update(e.ctx, UpdateRequest{Mutation: m, ID: "Z", Fields: Fields{Phase: ptr("P")}}); err != nil {
		t.Fatal(err)
	}
	hdr, _ := store.ReadSnapshotHeader(e.dir)
	names, _ = store.ArchiveNames(e.dir)
	if !store.NamesMatch(names, hdr) {
		t.Fatal("the writer did not rewrite the backlog into its normal form")
	}
	if c, err := e.open().Get("Z"); err != nil || c.Body != "written on a full disk" || c.Phase != "P" {
		t.Fatalf("after the rewrite: %+v %v", c, err)
	}
}

// TestAutomaticCompactionOnFullDisk: a write that triggers a compaction the
// full disk fails is still acknowledged (it is durable), the failure shows
// in stats, every later call reads and writes, and the compaction succeeds
// once the disk is freed.
func TestAutomaticCompactionOnFullDisk(t *testing.T) {
	e := compactedWithTail(t)
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"compact_bytes":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := e.open()
	defer b.Close()
	full := fullDisk(t, compactionSteps["snapshot"], false)
	if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: "E", Title: "E"}); err != nil {
		t.Fatalf("the write that triggered the compaction: %v", err)
	}
	if st, err := b.Stats(); err != nil || !strings.Contains(st.CompactError, "no space left") {
		t.Fatalf("stats: compact_error %q, %v", st.CompactError, err)
	}
	if bad := works(e, b, "auto"); len(bad) > 0 {
		t.Fatal(bad)
	}
	if left := leftovers(t, e.dir, false); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
	full()
	if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: "F", Title: "F"}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Stats(); err != nil || st.CompactError != "" || st.EventsSinceCompaction != 0 {
		t.Fatalf("after freeing the disk: %+v %v", st, err)
	}
	if left := leftovers(t, e.dir, true); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}
