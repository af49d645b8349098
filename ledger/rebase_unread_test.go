package ledger

import (
	"bytes"
	"maps"
	"testing"
	"time"
)

// compactedBase is a backlog folded into one archive segment, its tree, and
// the segment's name.
func compactedBase(t *testing.T) (*env, Tree, string) {
	t.Helper()
	base := seeded(t)
	if _, err := base.b.Compact(base.ctx); err != nil {
		t.Fatal(err)
	}
	tr := base.tree()
	segs := tr.archives()
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	return base, tr, segs[0]
}

func unread(tr Tree, names ...string) Tree {
	out := maps.Clone(tr)
	for _, n := range names {
		out[n] = nil
	}
	return out
}

func newCreateLine(t *testing.T, id, card string, at time.Time) []byte {
	t.Helper()
	title := "card " + card
	line, err := EncodeLine(&Event{V: 1, ID: id, At: at, Actor: "x", Op: OpCreate, Card: card, Fields: &Fields{Title: &title}})
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TestRebaseOntoSharedSegments: a segment both sides hold is not read
// while every local event is newer than it; a local event old enough to be
// in it (a line a git merge brought back into the ledger) makes the rebase
// read it, and that event is not appended a second time.
func TestRebaseOntoSharedSegments(t *testing.T) {
	base, t0, seg := compactedBase(t)
	base.create("U1")
	upstream := base.tree()
	later := base.clk.Now().Add(time.Minute)
	l1 := newCreateLine(t, "00000000000000aa", "L1", later)
	loads := 0
	load := func(name string) ([]byte, error) { loads++; return t0[name], nil }

	for _, tc := range []struct {
		name      string
		ledger    []byte
		wantLoads int
	}{
		{"new events only", l1, 0},
		{"an archived event back in the ledger", append(append([]byte(nil), splitLines(t0[seg])[0]...), l1...), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loads = 0
			local := maps.Clone(t0)
			local[LedgerFile] = tc.ledger
			out, res, err := rebaseOnto(unread(upstream, seg), unread(local, seg), load)
			if err != nil {
				t.Fatal(err)
			}
			if loads != tc.wantLoads || res.Local != 1 || res.Pulled != 1 {
				t.Fatalf("loads %d, result %+v", loads, res)
			}
			if out[seg] != nil {
				t.Fatal("the shared segment was filled in")
			}
			want, _, err := rebase(upstream, local)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out[LedgerFile], want[LedgerFile]) {
				t.Fatalf("ledger\n%s\nwant\n%s", out[LedgerFile], want[LedgerFile])
			}
			s, err := out.foldWith(load)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"A", "B", "C", "U1", "L1"} {
				if _, ok := s.Card(id); !ok {
					t.Errorf("card %s missing", id)
				}
			}
		})
	}
}

// TestFoldWithReadsSegmentsOnlyWhenStale: a tree whose snapshot matches
// its segments folds without them; one whose ledger holds a line older
// than the snapshot (a git merge) folds in its normal form, reading them.
func TestFoldWithReadsSegmentsOnlyWhenStale(t *testing.T) {
	base, t0, seg := compactedBase(t)
	base.create("D")
	tr := base.tree()
	loads := 0
	load := func(name string) ([]byte, error) { loads++; return tr[name], nil }
	want, err := tr.fold(true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := unread(tr, seg).foldWith(load)
	if err != nil || loads != 0 || got.Events() != want.Events() || got.Len() != want.Len() {
		t.Fatalf("consistent tree: loads %d, %d/%d events, err %v", loads, got.Events(), want.Events(), err)
	}
	// An unread snapshot is read: the fold starts from it.
	loads = 0
	got, err = unread(tr, seg, SnapshotFile).foldWith(load)
	if err != nil || loads != 1 || got.Events() != want.Events() || got.Len() != want.Len() {
		t.Fatalf("unread snapshot: loads %d, %d/%d events, err %v", loads, got.Events(), want.Events(), err)
	}
	loads = 0
	stale := maps.Clone(tr)
	stale[LedgerFile] = append(append([]byte(nil), splitLines(t0[seg])[0]...), tr[LedgerFile]...)
	want, err = stale.fold(true)
	if err != nil {
		t.Fatal(err)
	}
	got, err = unread(stale, seg).foldWith(load)
	if err != nil || loads != 1 || got.Events() != want.Events() || got.Len() != want.Len() {
		t.Fatalf("stale tree: loads %d, %d/%d events, err %v", loads, got.Events(), want.Events(), err)
	}
}

// TestRebaseOntoUnnamedSegment: a shared segment whose name does not say
// its newest event is read, so the re-stamp rule still knows upstream's
// newest event: a local event newer than everything keeps its stamp.
func TestRebaseOntoUnnamedSegment(t *testing.T) {
	base, t0, seg := compactedBase(t)
	const other = ArchiveDir + "/imported.jsonl"
	rename := func(tr Tree) Tree {
		out := maps.Clone(tr)
		out[other] = out[seg]
		delete(out, seg)
		return out
	}
	local := rename(t0)
	local[LedgerFile] = newCreateLine(t, "00000000000000aa", "L1", base.clk.Now().Add(time.Minute))
	loads := 0
	load := func(name string) ([]byte, error) { loads++; return t0[seg], nil }
	out, res, err := rebaseOnto(unread(rename(t0), other), unread(local, other), load)
	if err != nil {
		t.Fatal(err)
	}
	if loads != 1 || res.Local != 1 || res.Restamped != 0 || !bytes.Equal(out[LedgerFile], local[LedgerFile]) {
		t.Fatalf("loads %d, result %+v, ledger\n%s", loads, res, out[LedgerFile])
	}
}

// TestFoldOnSnapshotReadsTheLocalSnapshot: a tree whose snapshot is unread
// because it is the backlog's own folds from that file, loading nothing,
// to the state a whole fold gives, ledger lines the backlog lacks
// included; a stale tree falls back to FoldWith.
func TestFoldOnSnapshotReadsTheLocalSnapshot(t *testing.T) {
	base, t0, seg := compactedBase(t)
	base.create("D")
	tr := base.tree()
	tr[LedgerFile] = append(append([]byte(nil), tr[LedgerFile]...), newCreateLine(t, "00000000000000ab", "U1", base.clk.Now().Add(time.Minute))...)
	loads := 0
	load := func(name string) ([]byte, error) { loads++; return tr[name], nil }
	want, err := tr.fold(true)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, tr Tree, wantLoads int) {
		t.Helper()
		loads = 0
		err := unread(tr, seg, SnapshotFile).FoldOnSnapshot(base.b.Dir(), load, func(got *State) error {
			for _, id := range []string{"D", "U1"} {
				w, _ := want.Card(id)
				g, ok := got.Card(id)
				if !ok || g.Version != w.Version || g.Title != w.Title {
					t.Errorf("%s: card %s folds to %+v, want %+v", what, id, g, w)
				}
			}
			if got.Events() != want.Events() {
				t.Errorf("%s: %d events, want %d", what, got.Events(), want.Events())
			}
			return nil
		})
		if err != nil || loads != wantLoads {
			t.Fatalf("%s: loads %d, err %v", what, loads, err)
		}
	}
	check("consistent tree", tr, 0)
	stale := maps.Clone(tr)
	stale[LedgerFile] = append(append([]byte(nil), splitLines(t0[seg])[0]...), tr[LedgerFile]...)
	if want, err = stale.fold(true); err != nil {
		t.Fatal(err)
	}
	check("stale tree", stale, 2)
}
