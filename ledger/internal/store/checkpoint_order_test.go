package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// orderBacklog is a compacted backlog of 1,000 cards (priority i%10) with
// a ledger tail that notes on 400 of them, claims the first 40 in claim
// order, links three to K0500 and creates three with idempotency keys, and a
// checkpoint of all of it: a checkpoint holding hundreds of
// cards, as a busy backlog has, the claimed ones first in claim order.
func orderBacklog(t *testing.T) (dir string, now time.Time) {
	t.Helper()
	dir = t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	var buf []byte
	emit := func(e *wire.Event) {
		n++
		at = at.Add(time.Millisecond)
		e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("ord%06d", n), at, "a"
		line, err := wire.EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		buf = append(buf, line...)
	}
	flush := func() {
		f, err := os.OpenFile(filepath.Join(dir, LedgerFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
		buf = buf[:0]
	}
	id := func(i int) string { return fmt.Sprintf("K%04d", i) }
	for i := range 1000 {
		title, prio := "card "+id(i), i%10
		emit(&wire.Event{Op: wire.OpCreate, Card: id(i), Fields: &wire.Fields{Title: &title, Priority: &prio}})
	}
	flush()
	compactHere(t, dir)
	for k := range 400 {
		emit(&wire.Event{Op: wire.OpNote, Card: id(k * 7 % 1000), Text: "touched"})
	}
	for k := range 40 { // the first cards in claim order, leased
		c := id(10*k + 9)
		emit(&wire.Event{Op: wire.OpClaim, Card: c, Owner: "w", TTLSeconds: 3600, ExpectVersion: 0, Epoch: 1})
	}
	for _, from := range []string{id(7), id(14), id(21)} {
		emit(&wire.Event{Op: wire.OpLink, Card: from, To: id(500), LinkType: wire.LinkRelated})
	}
	for i, key := range []string{"key-a", `we"ird`, "tr:77"} {
		title := "keyed"
		emit(&wire.Event{Op: wire.OpCreate, Card: id(1000 + i), Fields: &wire.Fields{Title: &title, IdempotencyKey: key}})
	}
	flush()
	checkpointHere(t, dir)
	return dir, at.Add(time.Minute)
}

// openLazy opens dir at now and checks that the load went through the
// checkpoint with at least min of its cards not decoded.
func openLazy(t *testing.T, dir string, now time.Time, min int) *Store {
	t.Helper()
	b, err := Open(dir, Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if b.ckptLines == 0 || b.state.Undecoded() < min {
		b.Close()
		t.Fatalf("the load used the checkpoint: %v, with %d cards not decoded (want %d)", b.ckptLines > 0, b.state.Undecoded(), min)
	}
	return b
}

// TestCheckpointClaimOrderDecodesFew: at a checkpoint holding hundreds of
// cards, a ready list with a limit, a pick and a claim decode only the
// cards the claim order reaches, not every card the checkpoint holds; and
// answer what the fold without the checkpoint answers.
func TestCheckpointClaimOrderDecodesFew(t *testing.T) {
	dir, now := orderBacklog(t)
	plain := t.TempDir()
	if err := os.CopyFS(plain, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(plain, CacheDir, CheckpointFile))
	answers := func(dir string, count bool) (got []string) {
		b, err := Open(dir, Options{Clock: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		undecoded := b.state.Undecoded()
		if count && (b.ckptLines == 0 || undecoded < 400) {
			t.Fatalf("the load used the checkpoint: %v, with %d cards not decoded", b.ckptLines > 0, undecoded)
		}
		step := func(what string, max int) {
			left := b.state.Undecoded()
			if count && undecoded-left > max {
				t.Errorf("%s decoded %d of the checkpoint's %d cards, want at most %d", what, undecoded-left, undecoded, max)
			}
			if count {
				t.Logf("%s decoded %d cards, %d not decoded yet", what, undecoded-left, left)
			}
			undecoded = left
		}
		if err := b.View(func(s *fold.State, now time.Time) error {
			for _, c := range s.List(fold.Filter{Ready: true, Limit: 10}, now, "") {
				got = append(got, c.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		step("ready --limit 10", 12)
		if err := b.withLock(t.Context(), func() error {
			var c *wire.Card
			if err := b.state.Resolve(func() { c = b.state.Pick(fold.Filter{}, now) }); err != nil || c == nil {
				return fmt.Errorf("pick: %v %v", c, err)
			}
			got = append(got, "pick "+c.ID)
			e := &wire.Event{V: 1, ID: "claim-1", At: now, Actor: "x", Op: wire.OpClaim, Card: c.ID, Owner: "x", TTLSeconds: 600, ExpectVersion: c.Version, Epoch: c.ClaimEpoch + 1}
			line, d, err := WrittenLine(e)
			if err != nil {
				return err
			}
			if err := b.state.Check(d); err != nil {
				return err
			}
			_, err = b.Append(t.Context(), []*wire.Event{d}, line)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		step("a claim", 4)
		for _, c := range b.state.PickTop(fold.Filter{}, now, 5) {
			got = append(got, "next "+c.ID)
		}
		step("the next five picks", 8)
		// What bl show reads besides the card: the links to it and its
		// children; only the lines that name it are decoded.
		if err := b.View(func(s *fold.State, now time.Time) error {
			for _, l := range s.LinksTo("K0500") {
				got = append(got, "linked "+l.Type+" "+l.To)
			}
			for _, c := range s.Children("K0500") {
				got = append(got, "child "+c.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		step("the links to a card and its children", 4)
		// An idempotency key looked up (bl create --idempotency-key):
		// only the lines that may hold it.
		for _, k := range []string{"key-a", "key-none"} {
			id, ok := b.state.KeyOwner(k)
			got = append(got, fmt.Sprint("key ", k, " ", id, " ", ok))
		}
		step("two idempotency keys looked up", 2)
		// A word typed for a card (bl show K050): an id prefix, a
		// source key.
		got = append(got, fmt.Sprint("named ", b.state.CardsNamed("K050"), b.state.CardsNamed("77")))
		step("a prefix and a source key", 5)
		// One the encoder escapes: every line.
		id, ok := b.state.KeyOwner(`we"ird`)
		got = append(got, fmt.Sprint("key we\"ird ", id, " ", ok))
		return got
	}
	got, want := answers(dir, true), answers(plain, false)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through the checkpoint:\n got %v\nwant %v", got, want)
	}
	if len(got) != 10+1+5+3+4 {
		t.Fatalf("answers %v: want 10 ready, a pick, 5 next, 3 links, 3 keys and the named", got)
	}
	if k := got[len(got)-4:]; k[0] != "key key-a K1000 true" || k[1] != "key key-none  false" || k[2] != "named [K0500 K0501 K0502 K0503 K0504 K0505 K0506 K0507 K0508 K0509] [K1002]" || k[3] != `key we"ird K1001 true` {
		t.Fatalf("keys and names answered %q", k)
	}
}

// cardKeyAt is where card line k's key starts in checkpoint data.
func cardKeyAt(data []byte, k int) int {
	return checkpointHeaderLen + 8*int(binary.LittleEndian.Uint64(data[8+8*ckIDs:])) + cardKeyLen*k
}

// forgeKey reseals the checkpoint at path with the key of card id changed
// by edit (its bytes, cardKeyLen of them: priority, status, created_at,
// lease end), checksums and all: a key that disagrees with its line.
func forgeKey(t *testing.T, path, id string, edit func(key []byte)) {
	t.Helper()
	data := mustRead(t, path)
	b := openCkLines(t, data)
	k := -1
	for i, cl := range b {
		if cl == id {
			k = i
		}
	}
	if k < 0 {
		t.Fatalf("card %s is not in the checkpoint", id)
	}
	at := cardKeyAt(data, k) - checkpointHeaderLen
	reseal(t, path, func(body []byte) []byte {
		edit(body[at : at+cardKeyLen])
		return body
	})
}

// openCkLines lists the ids of a checkpoint's card lines, in order.
func openCkLines(t *testing.T, data []byte) []string {
	t.Helper()
	var ids []string
	for _, line := range bytes.Split(data[checkpointHeaderLen+linesAt(data):], []byte{'\n'}) {
		if id, ok := cardLineID(bytes.TrimSuffix(line, []byte{'\n'})); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestCheckpointForgedKeyFails is the negative control of the keys: a
// checkpoint whose key for a card disagrees with the card's line (sealed
// with valid checksums, as only a local forgery can be) makes the read
// that reaches that card fail with the fault, and never answers another
// card in its place: the ready list, the pick and the claim.
func TestCheckpointForgedKeyFails(t *testing.T) {
	dir, now := orderBacklog(t)
	path := filepath.Join(dir, CacheDir, CheckpointFile)
	// K0021 (priority 1, noted in the tail) is keyed as priority 9 and
	// the oldest card: the walk reaches it first.
	forgeKey(t, path, "K0021", func(key []byte) {
		binary.LittleEndian.PutUint64(key, 9)
		binary.LittleEndian.PutUint64(key[12:], 0)
	})
	b := openLazy(t, dir, now, 400)
	defer b.Close()
	var got []wire.Card
	err := b.View(func(s *fold.State, now time.Time) error {
		got = s.List(fold.Filter{Ready: true, Limit: 10}, now, "")
		return nil
	})
	if !errors.Is(err, wire.ErrCorrupt) {
		t.Fatalf("ready --limit 10 answered %d cards, error %v; want ErrCorrupt", len(got), err)
	}
	var picked *wire.Card
	err = b.withLock(t.Context(), func() error {
		return b.state.Resolve(func() { picked = b.state.Pick(fold.Filter{}, now) })
	})
	if !errors.Is(err, wire.ErrCorrupt) || picked != nil {
		t.Fatalf("the pick answered %v, error %v; want none and ErrCorrupt", picked, err)
	}
	// The card itself, looked up, fails too: its line is not its key's.
	if c := b.state.Find("K0021"); c != nil {
		t.Fatalf("Find answered %+v", c)
	}
	if err := b.state.TakeFault(); !errors.Is(err, wire.ErrCorrupt) {
		t.Fatalf("Find's fault: %v, want ErrCorrupt", err)
	}
	// Its status forged (claimed for ready): the full claim order reaches
	// it, and fails the same way.
	dir2, _ := orderBacklog(t)
	forgeKey(t, filepath.Join(dir2, CacheDir, CheckpointFile), "K0021", func(key []byte) {
		binary.LittleEndian.PutUint32(key[8:], 1)
	})
	b2 := openLazy(t, dir2, now, 400)
	defer b2.Close()
	err = b2.View(func(s *fold.State, now time.Time) error {
		s.InClaimOrder(time.Time{}, func(c *wire.Card) bool { return true })
		return nil
	})
	if !errors.Is(err, wire.ErrCorrupt) {
		t.Fatalf("the claim order of a forged status: %v, want ErrCorrupt", err)
	}
}

// TestCheckpointOldFormatIgnored: a checkpoint bl wrote before its cards
// carried keys (bltail03), bound to these very files and sealed, is
// ignored: the load folds the tail and answers as without it.
func TestCheckpointOldFormatIgnored(t *testing.T) {
	dir, now := orderBacklog(t)
	path := filepath.Join(dir, CacheDir, CheckpointFile)
	data := mustRead(t, path)
	// The old layout: no card count in the header, no keys in the body.
	le := binary.LittleEndian
	old := append([]byte("bltail03"), data[8:8+8*ckCards]...)
	old = append(old, data[8+8*(ckCards+1):checkpointHeaderLen]...)
	nids := int(le.Uint64(data[8+8*ckIDs:]))
	body := append(append([]byte(nil), data[checkpointHeaderLen:checkpointHeaderLen+8*nids]...), data[checkpointHeaderLen+linesAt(data):]...)
	oldLen := len(old)
	le.PutUint64(old[oldLen-8*2:], uint64(checkpointSum(0, body)))
	le.PutUint64(old[oldLen-8*3:], uint64(len(body)))
	le.PutUint64(old[oldLen-8:], uint64(checkpointSum(0, old[:oldLen-8])))
	if err := os.WriteFile(path, append(old, body...), 0o644); err != nil {
		t.Fatal(err)
	}
	got, via := dumpStore(t, dir, now)
	if via {
		t.Fatal("an old-format checkpoint was used")
	}
	os.Remove(path)
	if want, _ := dumpStore(t, dir, now); !reflect.DeepEqual(got, want) {
		t.Fatalf("answers differ:\n got %+v\nwant %+v", got, want)
	}
	// The same bytes under the new magic, sealed again: the layout does
	// not read, and is ignored as well.
	copy(old, checkpointMagic[:])
	le.PutUint64(old[oldLen-8:], uint64(checkpointSum(0, old[:oldLen-8])))
	if err := os.WriteFile(path, append(old, body...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, via := dumpStore(t, dir, now); via {
		t.Fatal("an old layout under the new magic was used")
	}
}
