package ledger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// restampFixture returns two versions of one backlog: pre, a clone's files
// holding a local claim it has not pushed, and post, the same clone after
// bl sync rebased that claim onto an upstream that moved on (Rebase
// re-stamps it after upstream's newest event, keeping its id). Git can
// bring both into one tree: pre was committed (bl sync without a push, a
// plain git commit) and merged somewhere before post arrived.
func restampFixture(t *testing.T) (pre, post Tree, claim string) {
	t.Helper()
	up := newEnv(t)
	up.create("A")
	up.create("B")
	base, err := ReadTree(up.dir)
	if err != nil {
		t.Fatal(err)
	}
	loc := newEnv(t)
	writeTreeFiles(t, loc.dir, base)
	loc.b = loc.open()
	loc.clk.Set(up.clk.Now().Add(time.Second))
	loc.claim("A", "w1", time.Hour)
	claim = loc.lastEvent().ID
	if pre, err = ReadTree(loc.dir); err != nil {
		t.Fatal(err)
	}
	up.clk.Advance(time.Hour)
	up.appendsOne(OpUpdate, doUpdate("B", Fields{Title: strp("moved on")}))
	upstream, err := ReadTree(up.dir)
	if err != nil {
		t.Fatal(err)
	}
	post, res, err := rebase(upstream, pre)
	if err != nil {
		t.Fatal(err)
	}
	if res.Restamped != 1 {
		t.Fatalf("fixture: rebase re-stamped %d events, want 1", res.Restamped)
	}
	return pre, post, claim
}

func writeTreeFiles(t *testing.T, dir string, tr Tree) {
	t.Helper()
	for name, data := range tr {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openTree writes tr into a fresh backlog directory and opens it.
func openTree(t *testing.T, tr Tree) (string, *Backlog) {
	t.Helper()
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	writeTreeFiles(t, dir, tr)
	b, err := Open(dir, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open the merged backlog: %v", err)
	}
	return dir, b
}

// TestRestampedCopiesSettle: a textual union of the files before and after
// bl sync re-stamped an event holds that event id twice with two stamps.
// Whatever the line order, and whether the first copy was compacted into
// an archive first, bl reads the later stamp only: the fold, the history,
// doctor and a compaction all agree with the post-sync backlog.
func TestRestampedCopiesSettle(t *testing.T) {
	pre, post, claim := restampFixture(t)
	want, err := post.fold(true)
	if err != nil {
		t.Fatal(err)
	}
	preLines, postLines := splitLines(pre[LedgerFile]), splitLines(post[LedgerFile])
	early := preLines[len(preLines)-1] // the claim as first stamped
	union := func(lines ...[]byte) Tree {
		tr := Tree{}
		for name, data := range post {
			tr[name] = data
		}
		tr[LedgerFile] = bytes.Join(lines, nil)
		return tr
	}
	// The post-sync ledger with the early copy put back in.
	inOrder := union(append(append(append([][]byte{}, postLines[:2]...), early), postLines[2:]...)...)
	atEnd := union(append(append([][]byte{}, postLines...), early)...)

	compactedPre := func() Tree {
		dir, b := openTree(t, pre)
		if _, err := b.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Close()
		tr, err := ReadTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range post { // post's ledger joins pre's archive and snapshot
			if name == LedgerFile {
				tr[name] = data
			}
		}
		return tr
	}()

	for _, tc := range []struct {
		name string
		tree Tree
	}{
		{"lines in order", inOrder},
		{"early copy last", atEnd},
		{"early copy archived", compactedPre},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tree.fold(true)
			if err != nil {
				t.Fatalf("Tree.Fold: %v", err)
			}
			if a, b := foldJSON(t, got), foldJSON(t, want); a != b {
				t.Fatalf("Tree.Fold differs from the post-sync fold:\n%s\nwant\n%s", a, b)
			}
			dir, b := openTree(t, tc.tree)
			defer b.Close()
			if a, w := foldJSON(t, b.held()), foldJSON(t, want); a != w {
				t.Fatalf("Open folds differently from the post-sync fold:\n%s\nwant\n%s", a, w)
			}
			var seen []time.Time
			if _, err := b.History(HistoryFilter{}, func(e *Event, _ *Conflict) error {
				if e.ID == claim {
					seen = append(seen, e.At)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(seen) != 1 || !seen[0].Equal(stampOf(t, post, claim)) {
				t.Fatalf("history shows the claim at %v, want once at %v", seen, stampOf(t, post, claim))
			}
			rep, err := Diagnose(dir, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Corrupt {
				t.Fatalf("doctor: %+v", rep.Damage)
			}
			if _, err := b.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			var hist []*Event
			if _, err := b.History(HistoryFilter{}, func(e *Event, _ *Conflict) error {
				hist = append(hist, e)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if a, w := foldJSON(t, fold.Fold(hist)), foldJSON(t, want); a != w {
				t.Fatalf("after compaction the history folds to\n%s\nwant\n%s", a, w)
			}
			again, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if a, w := foldJSON(t, again.held()), foldJSON(t, want); a != w {
				t.Fatalf("after compaction the backlog folds to\n%s\nwant\n%s", a, w)
			}
		})
	}
}

// foldJSON renders what a fold decided: cards, conflicts, how many events
// it applied and the newest.
func foldJSON(t *testing.T, s *fold.State) string {
	t.Helper()
	last := s.Last()
	return fmt.Sprintf("%s\nconflicts %+v\nevents %d, last %s", stateJSON(t, s), s.Conflicts(), s.Events(), last.ID)
}

// stampOf returns the stamp event id has in tr.
func stampOf(t *testing.T, tr Tree, id string) time.Time {
	t.Helper()
	evs, err := tr.Events()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.ID == id {
			return e.At
		}
	}
	t.Fatalf("event %s is not in the tree", id)
	return time.Time{}
}

// TestRestampSettlesEitherWay: MergeFiles (the optional git driver) and a
// ledger read settle the two copies to the same line, in either order.
func TestRestampSettlesEitherWay(t *testing.T) {
	pre, post, _ := restampFixture(t)
	ab, err := MergeFiles(pre[LedgerFile], post[LedgerFile])
	if err != nil {
		t.Fatal(err)
	}
	ba, err := MergeFiles(post[LedgerFile], pre[LedgerFile])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ab, ba) || !bytes.Equal(ab, post[LedgerFile]) {
		t.Fatalf("merge driver:\n%s\n%s\nwant the post-sync ledger\n%s", ab, ba, post[LedgerFile])
	}
}

// TestRestampIsNotAnyDifference: the rule settles a copy that differs in
// its stamp only; any other difference under one id stays damage.
func TestRestampIsNotAnyDifference(t *testing.T) {
	pre, post, _ := restampFixture(t)
	lines := splitLines(pre[LedgerFile])
	e, err := DecodeLine(bytes.TrimSuffix(lines[len(lines)-1], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	e.At = e.At.Add(time.Hour)
	e.Owner = "w2"
	other, err := EncodeLine(e)
	if err != nil {
		t.Fatal(err)
	}
	tr := Tree{LedgerFile: append(append([]byte{}, post[LedgerFile]...), other...)}
	if _, err := tr.fold(true); err == nil {
		t.Fatal("two different events with one id folded")
	}
}
