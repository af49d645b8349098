package gitsync

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// TestBacklogPairAtReadsWhatDiffers: bl diff of two adjacent commits reads
// the archive segments neither changed not at all, and says what the
// commits read whole say; a pair that is not adjacent reads what it needs.
// Before, each side read every segment: the cost grew with the history.
func TestBacklogPairAtReadsWhatDiffers(t *testing.T) {
	w := newWorld(t)
	dir := w.clone("a")
	b := open(t, dir)
	create(t, b, "alice", "H1", "H2", "H3")
	compact(t, b)
	create(t, b, "alice", "H4")
	compact(t, b)
	commit := func(msg string) {
		w.git(dir, "add", "-A")
		w.git(dir, "commit", "-q", "-m", msg)
	}
	commit("history")
	create(t, b, "alice", "N1")
	commit("one card")
	create(t, b, "alice", "N2")
	compact(t, b)
	commit("compacted")

	g, err := OpenRepo(filepath.Join(dir, ".backlog"))
	if err != nil {
		t.Fatal(err)
	}
	full := func(rev string) ledger.Tree {
		tr, _, err := g.BacklogAt(rev)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, c := range []struct {
		old, new string
		reads    bool // segments read
	}{
		{"HEAD~2", "HEAD~1", false},
		{"HEAD~1", "HEAD", true}, // a compaction between: not an append
		{"HEAD~2", "HEAD", true},
	} {
		var reads []string
		traceRead = func(kind, name string) {
			if strings.HasPrefix(name, ledger.ArchiveDir+"/") {
				reads = append(reads, kind+" "+name)
			}
		}
		trees, loads, _, err := g.BacklogPairAt(c.old, c.new)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ledger.DiffUnread(trees[0], trees[1], loads[0], loads[1])
		traceRead = nil
		if err != nil {
			t.Fatal(err)
		}
		if !c.reads && len(reads) > 0 {
			t.Errorf("%s %s: read %v", c.old, c.new, reads)
		}
		want, err := ledger.DiffTrees(full(c.old), full(c.new))
		if err != nil {
			t.Fatal(err)
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("%s %s: %s\nread whole: %s", c.old, c.new, gj, wj)
		}
	}
}
