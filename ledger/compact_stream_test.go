package ledger

import (
	"bytes"
	"fmt"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// streamThroughAtomic sends the files compaction streams through the
// replaceAtomic seam too, until the test ends, so a test that makes
// replaceAtomic fail fails every step of a compaction.
func streamThroughAtomic(t *testing.T) {
	t.Helper()
	prev := store.ReplaceStream
	store.ReplaceStream = func(path string, write func(io.Writer) error) error {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return err
		}
		return store.ReplaceAtomic(path, buf.Bytes(), nil)
	}
	t.Cleanup(func() { store.ReplaceStream = prev })
}

// TestCompactStreams: batches write without compacting, and the one
// compaction after them (CompactDue) streams the ledger into the archive
// and the snapshot into its file: what it allocates is a small part of
// the bytes it moves, not the ledger and the snapshot held whole (the
// peak of a 100,000-issue import). The snapshot is byte for byte the one
// encodeSnapshot renders, and reads back as the same cards.
func TestCompactStreams(t *testing.T) {
	e := newEnv(t)
	body := strings.Repeat("imported text, kept whole. ", 300) // 8 KB a card
	for batch := range 10 {
		var evs []*Event
		for i := range 200 {
			id := fmt.Sprintf("C%d", batch*200+i)
			title := "card " + id
			evs = append(evs, &Event{Op: OpCreate, Card: id, Fields: &Fields{Title: &title, Body: &body}},
				&Event{Op: OpNote, Card: id, Text: "a note on " + id})
		}
		if _, err := e.b.WriteBatch(e.ctx, m, evs, false); err != nil {
			t.Fatal(err)
		}
	}
	ledgerBytes := int64(len(e.bytes()))
	if limit := e.b.CompactThreshold(); ledgerBytes < 10*limit {
		t.Fatalf("ledger of %d bytes, threshold %d: too small to test", ledgerBytes, limit)
	}
	if _, err := os.Stat(filepath.Join(e.dir, SnapshotFile)); err == nil {
		t.Fatal("a batch compacted: an import would rewrite the snapshot again and again")
	}
	want, err := e.b.List(Filter{}, SortID)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := e.b.CompactDue(e.ctx); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := int64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("compacted a %d-byte ledger allocating %d bytes", ledgerBytes, alloc)
	if alloc > ledgerBytes/4 {
		t.Errorf("compaction allocated %d bytes for a %d-byte ledger: it holds the ledger or the snapshot whole", alloc, ledgerBytes)
	}
	if n := len(e.bytes()); n != 0 {
		t.Fatalf("ledger of %d bytes after CompactDue", n)
	}
	snap, err := os.ReadFile(filepath.Join(e.dir, SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	names, err := store.ArchiveNames(e.dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("archive %v, %v", names, err)
	}
	archived, err := os.ReadFile(filepath.Join(e.dir, filepath.FromSlash(names[0])))
	if err != nil || int64(len(archived)) != ledgerBytes {
		t.Fatalf("archive segment of %d bytes, the ledger was %d (%v)", len(archived), ledgerBytes, err)
	}
	encoded, _, err := store.EncodeSnapshot(e.b.held(), names, archived)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snap, encoded) {
		t.Fatal("the streamed snapshot differs from encodeSnapshot's bytes")
	}
	got, err := e.open().List(Filter{}, SortID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || !reflect.DeepEqual(got, want) {
		t.Fatalf("after compaction %d cards read back, want %d, or they differ", len(got), len(want))
	}
}
