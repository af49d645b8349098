package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// appendVia appends n creates through b, as a long-lived writer (bl run,
// the daemon, an import) does, one locked append each.
func appendVia(t *testing.T, b *Store, tag string, n int) {
	t.Helper()
	for i := range n {
		title := "card " + tag
		e := &wire.Event{V: 1, ID: fmt.Sprintf("%s-%d", tag, i), At: time.Now().UTC(), Actor: "w", Op: wire.OpCreate,
			Card: fmt.Sprintf("%s%03d", tag, i), Fields: &wire.Fields{Title: &title}}
		line, d, err := WrittenLine(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.withLock(t.Context(), func() error {
			if err := b.state.Check(d); err != nil {
				return err
			}
			_, err := b.Append(t.Context(), []*wire.Event{d}, line)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// lenOf is the card count a fresh handle on dir answers.
func lenOf(t *testing.T, dir string) (n int, via bool) {
	t.Helper()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return b.state.Len(), b.ckptLines > 0
}

// TestCheckpointAfterOwnCompaction: a handle that compacts and goes on
// writing (auto-compaction in bl run, the daemon, an import) writes its
// next checkpoint over the new snapshot; the cards it created since the
// old one must not be counted again over the new one. (Today the handle
// holds every card after compacting and writes none until it reloads.)
func TestCheckpointAfterOwnCompaction(t *testing.T) {
	defer func(n int) { CheckpointEvery = n }(CheckpointEvery)
	CheckpointEvery = 4
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	h := newCkHistory(1)
	h.appendLines(t, dir, 30)
	compactHere(t, dir)
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	appendVia(t, b, "A", 7)
	if _, err := b.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	appendVia(t, b, "B", 2*CheckpointEvery)
	ck := filepath.Join(dir, CacheDir, CheckpointFile)
	got, via := lenOf(t, dir)
	if err := os.Rename(ck, ck+".aside"); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	want, _ := lenOf(t, dir)
	if got != want {
		t.Fatalf("cards through the checkpoint %d (used: %v), by folding the tail %d", got, via, want)
	}
}

// rewriteSnapshotInPlace rewrites snapshot.json in place
// (same inode, same size, same header, every line whole) and its mtime set
// back, as `rsync -a --inplace`, `cp --preserve=timestamps` onto the file or
// an editor followed by `touch -d` leave it.
func rewriteSnapshotInPlace(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, SnapshotFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data := mustRead(t, path)
	var out []byte
	for i, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		if i > 0 {
			raw, err := wire.CheckFrame(line)
			if err != nil {
				t.Fatal(err)
			}
			if l, err := wire.ReadSnapshotLine(raw); err == nil && l.Card != nil {
				l.Card.Title = strings.Replace(l.Card.Title, "card", "CARD", 1)
				if line, err = wire.EncodeFramed(l); err != nil {
					t.Fatal(err)
				}
			}
		}
		out = append(out, line...)
	}
	if len(out) != len(data) {
		t.Fatalf("the rewrite changed the size: %d -> %d", len(data), len(out))
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(out, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointSnapshotRewrittenInPlace: after rewriteSnapshotInPlace a
// load through the checkpoint answers what folding the tail over the new
// bytes answers.
func TestCheckpointSnapshotRewrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	ckBacklog(t, dir, 3)
	rewriteSnapshotInPlace(t, dir)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	got, via := dumpStore(t, dir, now)
	ck := filepath.Join(dir, CacheDir, CheckpointFile)
	if err := os.Rename(ck, ck+".aside"); err != nil {
		t.Fatal(err)
	}
	want, _ := dumpStore(t, dir, now)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through the checkpoint (used: %v) the cards differ from the fold of the new snapshot:\n got %+v\nwant %+v", via, got.Cards, want.Cards)
	}
}

// TestCheckpointNotWrittenOverSnapshotRewrittenInPlace: a writer that read
// cards from the snapshot before it was rewritten in place (mtime set back)
// does not write what it holds as the checkpoint of the new bytes.
func TestCheckpointNotWrittenOverSnapshotRewrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	ckBacklog(t, dir, 4)
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rewriteSnapshotInPlace(t, dir)
	if err := writeCheckpoint(dir, b.snapInfo, b.state, &b.pos); err == nil {
		t.Fatal("a checkpoint of the cards read before the rewrite was written for the new snapshot")
	}
}

// TestCheckpointLedgerRewrittenInPlaceUnderWriter: a long-lived writer (the
// daemon, bl run --loop, bl mcp) holds the fold of the ledger's first
// lines; an editor that keeps the inode (nano, VS Code) rewrites one of
// those lines in place, same size, valid; the writer appends and writes a
// checkpoint. The checkpoint must name the bytes the writer folded, not
// the file as it is now, or it binds the new bytes to the old state and
// every load after it answers from the old line.
func TestCheckpointLedgerRewrittenInPlaceUnderWriter(t *testing.T) {
	defer func(n int) { CheckpointEvery = n }(CheckpointEvery)
	CheckpointEvery = 1
	dir := t.TempDir()
	ckBacklog(t, dir, 5)
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	path := filepath.Join(dir, LedgerFile)
	data := mustRead(t, path)
	var out []byte
	changed := false
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		if e, err := wire.DecodeLine(line); !changed && err == nil && e.Op == wire.OpCreate && e.Fields != nil && e.Fields.Title != nil {
			title := strings.Replace(*e.Fields.Title, "card", "CARD", 1)
			e.Fields.Title = &title
			if line, err = wire.EncodeLine(e); err != nil {
				t.Fatal(err)
			}
			changed = true
		}
		out = append(out, line...)
	}
	if !changed || len(out) != len(data) {
		t.Fatalf("no same-size rewrite (changed %v, %d -> %d bytes)", changed, len(data), len(out))
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(out, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	appendVia(t, b, "E", 2)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	got, via := dumpStore(t, dir, now)
	ck := filepath.Join(dir, CacheDir, CheckpointFile)
	if err := os.Rename(ck, ck+".aside"); err != nil {
		t.Fatal(err)
	}
	want, _ := dumpStore(t, dir, now)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through the checkpoint (used: %v) the cards differ from the fold of the ledger:\n got %+v\nwant %+v", via, got.Cards, want.Cards)
	}
}

// TestCheckpointLinkSwappedInWhileOpening: a git checkout can put a
// symbolic link (to a FIFO, to /dev/zero) at cache/tail.ckpt at any moment,
// also between a load's look at the path and its open: the load must not
// follow it (and wait on the FIFO forever, or read /dev/zero until memory
// runs out).
func TestCheckpointLinkSwappedInWhileOpening(t *testing.T) {
	dir := t.TempDir()
	ckBacklog(t, dir, 6)
	ck := filepath.Join(dir, CacheDir, CheckpointFile)
	good := mustRead(t, ck)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		for i := 0; !stop.Load(); i++ {
			tmp := ck + ".swap"
			if i%2 == 0 {
				_ = os.WriteFile(tmp, good, 0o644)
			} else {
				_ = os.Symlink(fifo, tmp)
			}
			_ = os.Rename(tmp, ck)
		}
	}()
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		for range 3000 {
			if b, err := Open(dir, Options{}); err == nil {
				b.Close()
			}
		}
	}()
	// Only a hang fails: a load that opened the FIFO never returns.
	select {
	case <-loaded:
	case <-time.After(2 * time.Minute):
		t.Fatal("a load hangs: it opened the FIFO a link swapped in at cache/tail.ckpt")
	}
}

// TestCheckpointWriterRefusesLinks: the checkpoint writer asks
// CheckLocalPath as every writer of a local file does. A cache/ that is a
// link (here to another directory inside the backlog, which nothing else
// refuses) or a link at cache/tail.ckpt gets no checkpoint through it, and
// the writer's tidying of leftover temp files removes nothing through it.
func TestCheckpointWriterRefusesLinks(t *testing.T) {
	for _, link := range []string{CacheDir, CacheDir + "/" + CheckpointFile} {
		t.Run(link, func(t *testing.T) {
			dir := t.TempDir()
			h := ckBacklog(t, dir, 7)
			elsewhere := filepath.Join(dir, "elsewhere")
			cache := filepath.Join(dir, CacheDir)
			if link == CacheDir {
				if err := os.Rename(cache, elsewhere); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("elsewhere", cache); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := os.MkdirAll(elsewhere, 0o755); err != nil {
					t.Fatal(err)
				}
				ck := filepath.Join(cache, CheckpointFile)
				if err := os.Rename(ck, filepath.Join(elsewhere, CheckpointFile)); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join("..", "elsewhere", CheckpointFile), ck); err != nil {
					t.Fatal(err)
				}
			}
			leftover := filepath.Join(elsewhere, "."+CheckpointFile+".tmp-1")
			if err := os.WriteFile(leftover, []byte("kept"), 0o644); err != nil {
				t.Fatal(err)
			}
			old := mustRead(t, filepath.Join(elsewhere, CheckpointFile))
			h.appendLines(t, dir, 5)
			b, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var lerr *LocalLinkError
			if err := writeCheckpoint(dir, b.snapInfo, b.state, &b.pos); !errors.As(err, &lerr) || lerr.Link != link {
				t.Errorf("writeCheckpoint through %s: %v", link, err)
			}
			if now := mustRead(t, filepath.Join(elsewhere, CheckpointFile)); !bytes.Equal(now, old) {
				t.Error("a checkpoint was written through the link")
			}
			if _, err := os.Stat(leftover); err != nil {
				t.Errorf("a file was removed through the link: %v", err)
			}
			if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(link))); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer the link: %v, %v", link, fi, err)
			}
		})
	}
}

// TestCheckpointLinesOutliveFile: a load decodes the checkpoint's card
// lines when first needed. Another writer replacing the file (by a
// rename) or a repair removing it meanwhile changes nothing the handle
// answers, collections or not.
func TestCheckpointLinesOutliveFile(t *testing.T) {
	dir := t.TempDir()
	h := ckBacklog(t, dir, 8)
	now := time.Now()
	want, _ := dumpStore(t, dir, now)
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.ckptLines == 0 || b.state.Undecoded() == 0 {
		t.Fatalf("not loaded through the checkpoint (%d lines, %d undecoded)", b.ckptLines, b.state.Undecoded())
	}
	// Another writer appends and renames its checkpoint over this one,
	// then the file is removed.
	ck := filepath.Join(dir, CacheDir, CheckpointFile)
	before := mustRead(t, ck)
	h.appendLines(t, dir, 3)
	checkpointHere(t, dir)
	if bytes.Equal(mustRead(t, ck), before) {
		t.Fatal("no other checkpoint was written")
	}
	runtime.GC()
	if err := os.Remove(ck); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var got []wire.Card
	b.state.Range(func(c *wire.Card) bool {
		got = append(got, c.Clone())
		return true
	})
	if err := b.state.TakeFault(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b wire.Card) int { return strings.Compare(a.ID, b.ID) })
	if !reflect.DeepEqual(got, want.Cards) {
		t.Error("the cards read after the file was replaced and removed differ from the fold")
	}
	b.Close()
}

// TestCheckpointWriterCopiesUndecodedLines: a writer restored from a
// checkpoint writes the next one without decoding the cards it did not
// read: their lines and keys go over as they are.
func TestCheckpointWriterCopiesUndecodedLines(t *testing.T) {
	dir := t.TempDir()
	h := ckBacklog(t, dir, 9)
	ck := filepath.Join(dir, CacheDir, CheckpointFile)
	old := ckCardLines(mustRead(t, ck))
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	undecoded := b.state.Undecoded()
	if b.ckptLines == 0 || undecoded == 0 {
		t.Fatalf("not loaded through the checkpoint (%d lines, %d undecoded)", b.ckptLines, undecoded)
	}
	if err := writeCheckpoint(dir, b.snapInfo, b.state, &b.pos); err != nil {
		t.Fatal(err)
	}
	if n := b.state.Undecoded(); n != undecoded {
		t.Errorf("writing the checkpoint decoded %d card lines", undecoded-n)
	}
	kept := 0
	for _, l := range ckCardLines(mustRead(t, ck)) {
		if slices.Contains(old, l) {
			kept++
		}
	}
	if kept < undecoded {
		t.Errorf("%d card lines were carried over as they were, want at least %d", kept, undecoded)
	}
	want, _ := dumpStore(t, dir, time.Now())
	h.appendLines(t, dir, 2)
	if got, via := dumpStore(t, dir, time.Now()); !via || got.Lines != want.Lines+2 {
		t.Errorf("the new checkpoint was not used (via %v, %d lines)", via, got.Lines)
	}
}

// ckCardLines lists a checkpoint's card lines, in order.
func ckCardLines(data []byte) []string {
	var out []string
	for _, line := range bytes.Split(data[checkpointHeaderLen+linesAt(data):], []byte{'\n'}) {
		if _, ok := cardLineID(line); ok {
			out = append(out, string(line))
		}
	}
	return out
}
