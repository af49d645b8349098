package ledger

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
)

// unionSnapshotEnv makes two clones of one backlog that each appended and
// compacted, and merges them as git's union would: the archive segments of
// both, the ledgers (both empty), and snapshot.json as given by merge.
func unionSnapshotEnv(t *testing.T, merge func(ours, theirs []byte) []byte) (*env, []*Event) {
	t.Helper()
	a := newEnv(t)
	a.create("A")
	a.create("B")
	a.claim("A", "w1", time.Hour)
	if _, err := a.b.Compact(a.ctx); err != nil {
		t.Fatal(err)
	}
	b := newEnv(t)
	copyDir(t, a.dir, b.dir)
	b.b = b.open()
	a.create("C")
	a.appendsOne(OpHeartbeat, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}))
	if _, err := a.b.Compact(a.ctx); err != nil {
		t.Fatal(err)
	}
	b.clk.Advance(time.Second)
	b.create("D")
	b.claim("B", "w2", time.Hour)
	if _, err := b.b.Compact(b.ctx); err != nil {
		t.Fatal(err)
	}
	ta, err := ReadTree(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTree(b.dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range tb {
		if _, ok := ta[name]; !ok {
			if err := os.WriteFile(filepath.Join(a.dir, filepath.FromSlash(name)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(a.dir, SnapshotFile), merge(ta[SnapshotFile], tb[SnapshotFile]), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every event of both: a's segments and b's.
	merged := Tree{}
	for n, d := range ta {
		merged[n] = d
	}
	for n, d := range tb {
		merged[n] = d
	}
	all, err := merged.Events()
	if err != nil {
		t.Fatal(err)
	}
	return a, all
}

// TestUnionOfSnapshots: a union of two snapshots (two headers, repeated
// card lines, each line with a good checksum) reads as stale, not damage:
// readers answer with the fold of every event, the next writer rebuilds
// the snapshot, and a line that fails its checksum is still damage.
func TestUnionOfSnapshots(t *testing.T) {
	shapes := map[string]func(ours, theirs []byte) []byte{
		// One conflict hunk over the whole file.
		"concatenated": func(ours, theirs []byte) []byte { return append(append([]byte(nil), ours...), theirs...) },
		// Ours, then the lines of theirs that ours lacks: git's union
		// where the common lines line up.
		"common lines once": func(ours, theirs []byte) []byte {
			out := append([]byte(nil), ours...)
			have := map[string]bool{}
			for _, l := range splitLines(ours) {
				have[string(l)] = true
			}
			for _, l := range splitLines(theirs) {
				if !have[string(l)] {
					out = append(out, l...)
				}
			}
			return out
		},
	}
	for name, merge := range shapes {
		t.Run(name, func(t *testing.T) {
			e, all := unionSnapshotEnv(t, merge)
			want := foldedJSON(t, fold.Fold(all))
			if got := e.foldedJSON(); got != want {
				t.Fatalf("fold of the union:\n%s\nwant\n%s", got, want)
			}
			rep, err := Diagnose(e.dir, e.clk.Now())
			if err != nil || rep.Corrupt || len(rep.Damage) != 0 || len(rep.Stale) != 1 || rep.Cards != 4 {
				t.Fatalf("diagnose = %+v, %v", rep, err)
			}
			s, err := mustTree(t, e.dir).fold(true)
			if err != nil || foldedJSON(t, s) != want {
				t.Fatalf("Tree.Fold: %v", err)
			}
			// The next writer rebuilds the snapshot, and appends.
			b := e.open()
			if _, err := b.Release(e.ctx, LeaseRequest{Mutation: m, ID: "B", Owner: "w2", Epoch: 1}); err != nil {
				t.Fatal(err)
			}
			snap, _ := os.ReadFile(filepath.Join(e.dir, SnapshotFile))
			if _, _, err := store.DecodeSnapshot(SnapshotFile, bytes.NewReader(snap), nil); err != nil {
				t.Fatalf("snapshot after a write: %v", err)
			}
			if rep, _ := Diagnose(e.dir, e.clk.Now()); len(rep.Damage) != 0 || len(rep.Stale) != 0 {
				t.Fatalf("after a write: %+v %+v", rep.Damage, rep.Stale)
			}
		})
	}
	t.Run("damaged line", func(t *testing.T) {
		e, _ := unionSnapshotEnv(t, shapes["concatenated"])
		path := filepath.Join(e.dir, SnapshotFile)
		data, _ := os.ReadFile(path)
		i := bytes.Index(data, []byte(`"title":"card `))
		data[i+10] = 'X'
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(e.dir, Options{}); err == nil {
			t.Fatal("a snapshot line that fails its checksum read")
		}
	})
}

// TestUnionSnapshotMissingArchives: a stale snapshot is rebuilt from the
// archives only when they hold every event it counts.
func TestUnionSnapshotMissingArchives(t *testing.T) {
	e, _ := unionSnapshotEnv(t, func(o, th []byte) []byte { return append(append([]byte(nil), o...), th...) })
	segs, _ := Segments(e.dir)
	if err := os.Remove(segs[0]); err != nil {
		t.Fatal(err)
	}
	// A git revert of a compaction does this: the snapshot counts events
	// the files no longer hold. It is stale, not damage: bl reads the
	// events there are and says so.
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || rep.Corrupt || len(rep.Stale) == 0 || rep.LostEvents == nil || rep.LostEvents.Claimed <= rep.LostEvents.Held {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
	var warned []string
	b, err := Open(e.dir, Options{Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatalf("a snapshot counting events the files lack made the backlog unreadable: %v", err)
	}
	defer b.Close()
	if _, err := b.List(Filter{}, ""); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(warned, func(m string) bool { return strings.Contains(m, "git revert or reset") }) {
		t.Fatalf("no warning that events are missing: %q", warned)
	}
}

func mustTree(t *testing.T, dir string) Tree {
	t.Helper()
	tr, err := ReadTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestUnionSegment: an archive segment holding the lines of two segments
// of one name, out of order and repeated, reads in order, each event once,
// in bl log and in the fold.
func TestUnionSegment(t *testing.T) {
	e := busy(t)
	want, wantLog := e.foldedJSON(), historyIDs(t, e.open())
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	segs, _ := Segments(e.dir)
	seg, _ := os.ReadFile(segs[0])
	lines := splitLines(seg)
	shuffled := slices.Clone(lines)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if err := os.WriteFile(segs[0], bytes.Join(append(shuffled, lines[:3]...), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := historyIDs(t, e.open()); !slices.Equal(got, wantLog) {
		t.Fatalf("history %v, want %v", got, wantLog)
	}
	if got := e.foldedJSON(); got != want {
		t.Fatal("fold changed")
	}
	if rep, err := Diagnose(e.dir, e.clk.Now()); err != nil || rep.Corrupt {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
}

// FuzzUnionLedger: any order and repetition of a valid ledger's lines (what
// git's union merge can leave) folds to the same state and the same
// history as the sorted file.
func FuzzUnionLedger(f *testing.F) {
	base := newEnv(f)
	base.create("A")
	base.create("B", func(r *CreateRequest) { r.DependsOn = []string{"A"} })
	base.claim("A", "w1", time.Minute)
	base.appendsOne(OpHeartbeat, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}))
	base.appendsOne(OpComplete, func(e *env) error {
		_, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 1})
		return err
	})
	base.create("C")
	base.claim("B", "w2", time.Minute)
	lines := base.lines()
	want, err := Tree{LedgerFile: base.bytes()}.fold(true)
	if err != nil {
		f.Fatal(err)
	}
	wantJSON := foldedJSON(f, want)
	wantLog := historyIDs(f, base.open())
	f.Add([]byte{6, 5, 4, 3, 2, 1, 0})
	f.Add([]byte{0, 0, 1, 1, 2})
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6})
	f.Fuzz(func(t *testing.T, recipe []byte) {
		if len(recipe) > 64 {
			return
		}
		var data []byte
		used := make([]bool, len(lines))
		for _, r := range recipe {
			i := int(r) % len(lines)
			used[i] = true
			data = append(data, lines[i]...)
		}
		for i := len(lines) - 1; i >= 0; i-- {
			if !used[i] {
				data = append(data, lines[i]...)
			}
		}
		s, err := Tree{LedgerFile: data}.fold(true)
		if err != nil {
			t.Fatal(err)
		}
		if got := foldedJSON(t, s); got != wantJSON {
			t.Fatalf("Tree.Fold of %v differs", recipe)
		}
		e := newEnv(t)
		e.writeLedger(data)
		if got := e.foldedJSON(); got != wantJSON {
			t.Fatalf("Open of %v differs:\n%s\nwant\n%s", recipe, got, wantJSON)
		}
		if got := historyIDs(t, e.open()); !slices.Equal(got, wantLog) {
			t.Fatalf("history of %v: %v, want %v", recipe, got, wantLog)
		}
	})
}

// TestArchiveConflictMarkers: an archive segment that a merge made before
// the union rule left with conflict markers fails bl log with an error
// naming them; bl doctor reports them and --repair keeps every event.
func TestArchiveConflictMarkers(t *testing.T) {
	e := busy(t)
	wantLog := historyIDs(t, e.open())
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	segs, _ := Segments(e.dir)
	lines := splitLines(mustRead(t, segs[0]))
	marked := bytes.Join([][]byte{[]byte("<<<<<<< HEAD\n"), bytes.Join(lines[:4], nil), []byte("=======\n"),
		bytes.Join(lines[2:], nil), []byte(">>>>>>> other\n")}, nil)
	if err := os.WriteFile(segs[0], marked, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.open().History(HistoryFilter{}, func(*Event, *Conflict) error { return nil }); err == nil || !bytes.Contains([]byte(err.Error()), []byte("git conflict markers")) {
		t.Fatalf("History: %v", err)
	}
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || !rep.Corrupt || len(rep.Damage) != 1 || rep.Damage[0].Kind != "conflict-markers" || !rep.Damage[0].Repairable {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.Corrupt || len(after.Damage) != 0 {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	if got := historyIDs(t, e.open()); !slices.Equal(got, wantLog) {
		t.Fatalf("history %v, want %v", got, wantLog)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
