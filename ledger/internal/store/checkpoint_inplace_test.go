package store

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// The tail checkpoint is a local file, but not only bl writes it: a user
// empties it (": > tail.ckpt"), copies an old one over it (cp writes in
// place), a backup or sync tool restores it in place. A handle that
// loaded from it (a long-running bl serve, bl mcp, bl daemon holds one
// for many calls) must answer as the checkpoint read, or refuse; never
// crash, never answer with bytes no check saw.

// ckHeldCards opens dir through its checkpoint, lets change rewrite the
// checkpoint file in place, then reads every card the handle holds.
func ckHeldCards(t *testing.T, dir string, change func(path string, data []byte), then func(b *Store)) ([]wire.Card, error) {
	t.Helper()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.ckptLines == 0 || b.state.Undecoded() == 0 {
		t.Fatalf("not loaded through the checkpoint (%d lines, %d undecoded)", b.ckptLines, b.state.Undecoded())
	}
	ck := filepath.Join(dir, CacheDir, CheckpointFile)
	change(ck, mustRead(t, ck))
	if then != nil {
		then(b)
	}
	var got []wire.Card
	b.state.Range(func(c *wire.Card) bool {
		got = append(got, c.Clone())
		return true
	})
	slices.SortFunc(got, func(a, b wire.Card) int { return strings.Compare(a.ID, b.ID) })
	return got, b.state.TakeFault()
}

// TestCheckpointRewrittenInPlaceWhileHeld: the checkpoint's bytes change
// in place after a handle loaded from it (a card's title, same length:
// another checkpoint copied over it lands the same way). The handle
// answers with the cards it checked.
func TestCheckpointRewrittenInPlaceWhileHeld(t *testing.T) {
	dir := t.TempDir()
	ckBacklog(t, dir, 11)
	want, _ := dumpStore(t, dir, time.Now())
	got, err := ckHeldCards(t, dir, func(path string, data []byte) { retitleInPlace(t, path, data) }, nil)
	if err != nil {
		t.Fatalf("the handle refused: %v", err)
	}
	if !reflect.DeepEqual(got, want.Cards) {
		t.Error("the handle answered with checkpoint bytes written after it checked them")
	}
}

// TestCheckpointTruncatedWhileHeld: the checkpoint is emptied in place
// after a handle loaded from it. The handle still answers (a mapped file
// cut short faults the process with SIGBUS on the next read of a card
// line). Run in a child process, which is what such a fault kills.
func TestCheckpointTruncatedWhileHeld(t *testing.T) {
	if os.Getenv("BL_TEST_CKPT_TRUNCATED") == "1" {
		dir := t.TempDir()
		ckBacklog(t, dir, 12)
		want, _ := dumpStore(t, dir, time.Now())
		got, err := ckHeldCards(t, dir, func(path string, _ []byte) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}, nil)
		if err != nil {
			t.Fatalf("the handle refused: %v", err)
		}
		if !reflect.DeepEqual(got, want.Cards) {
			t.Error("the handle answered with other cards")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointTruncatedWhileHeld$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BL_TEST_CKPT_TRUNCATED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the handle's process failed after its checkpoint was emptied in place: %v\n%s", err, firstLines(out, 8))
	}
}

func firstLines(b []byte, n int) []byte {
	lines := bytes.SplitAfterN(b, []byte{'\n'}, n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return bytes.Join(lines, nil)
}

// retitleInPlace changes a letter of every card's title in the checkpoint
// at path (read as data), writing over the file in place.
func retitleInPlace(t *testing.T, path string, data []byte) {
	t.Helper()
	lines := ckCardLines(data)
	if len(lines) == 0 {
		t.Fatal("no card lines")
	}
	for _, l := range lines {
		at := bytes.Index(data, []byte(l))
		title := bytes.Index(data[at:], []byte(`"title":"`))
		if at < 0 || title < 0 {
			t.Fatal("a card line without a title")
		}
		data[at+title+len(`"title":"`)] ^= 0x01 // a letter for another
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestCheckpointRewrittenInPlaceNotCopiedForward: a handle that loaded
// from a checkpoint writes the next one copying the card lines it did not
// decode. Bytes written in place meanwhile are not among them: the next
// load answers with the fold.
func TestCheckpointRewrittenInPlaceNotCopiedForward(t *testing.T) {
	dir := t.TempDir()
	h := ckBacklog(t, dir, 13)
	h.appendLines(t, dir, 3)
	want, _ := dumpStore(t, dir, time.Now())
	if _, err := ckHeldCards(t, dir, func(path string, data []byte) { retitleInPlace(t, path, data) }, func(b *Store) {
		if err := writeCheckpoint(dir, b.snapInfo, b.state, &b.pos); err != nil {
			t.Fatal(err)
		}
	}); err != nil {
		t.Fatalf("the handle refused: %v", err)
	}
	got, via := dumpStore(t, dir, time.Now())
	if !via {
		t.Fatal("the next load did not use the new checkpoint")
	}
	if !reflect.DeepEqual(got.Cards, want.Cards) {
		t.Error("the next checkpoint carried bytes written in place after the check")
	}
}
