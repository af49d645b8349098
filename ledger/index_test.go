package ledger

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	json "github.com/goccy/go-json"
)

// indexedHistory writes the events the fuzz bytes describe into a backlog:
// the first part compacted into a snapshot (with its index), the rest left
// in the ledger after it. Some events carry request ids and idempotency
// keys so the index's key and receipt tables are used.
func indexedHistory(t *testing.T, data []byte) (dir string, events []*Event) {
	t.Helper()
	dir = t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"version":1,"compact_bytes":-1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	split := 0
	if len(data) > 0 {
		split, data = int(data[0]), data[1:]
	}
	s := fold.NewState()
	at := t0
	var lines [][]byte
	for i := 0; i+4 <= len(data) && i < 4*200; i += 4 {
		var b [4]byte
		copy(b[:], data[i:i+4])
		at = at.Add(time.Duration(b[3]%32)*250*time.Millisecond + 1)
		e := buildFuzzEvent(s, len(events), at, b)
		if b[2]&128 != 0 {
			e.RequestID = fmt.Sprintf("r%d", len(events))
		}
		if e.Op == OpCreate && b[1]&64 != 0 {
			e.Fields.IdempotencyKey = "k-" + e.Card
		}
		line, err := EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Apply(e)
		events = append(events, e)
		lines = append(lines, line)
	}
	split = min(split, len(lines))
	write := func(ls [][]byte) {
		f, err := os.OpenFile(filepath.Join(dir, LedgerFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if _, err := f.Write(l); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	write(lines[:split])
	if split > 0 {
		b, err := Open(dir, Options{Clock: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if _, err := os.Stat(filepath.Join(dir, CacheDir, IndexFile)); err != nil {
			t.Fatalf("compaction wrote no index: %v", err)
		}
	}
	write(lines[split:])
	return dir, events
}

// indexQueries are the questions asked of both loads; each runs on a
// freshly opened backlog, so lazily read state from one never helps another.
func indexQueries(events []*Event) map[string]func(s *fold.State, now time.Time) any {
	q := map[string]func(s *fold.State, now time.Time) any{
		"ready": func(s *fold.State, now time.Time) any { return s.List(Filter{Ready: true}, now, SortClaim) },
		"ready1": func(s *fold.State, now time.Time) any {
			return s.List(Filter{Ready: true, Limit: 1}, now, SortClaim)
		},
		"ready2": func(s *fold.State, now time.Time) any { return s.List(Filter{Ready: true, Limit: 2}, now, "") },
		"claimed": func(s *fold.State, now time.Time) any {
			return s.List(Filter{Status: []Status{StatusClaimed}}, now, SortClaim)
		},
		"open": func(s *fold.State, now time.Time) any {
			return s.List(Filter{Status: []Status{StatusReady, StatusClaimed}}, now, SortClaim)
		},
		"all-by-id":   func(s *fold.State, now time.Time) any { return s.List(Filter{}, now, SortID) },
		"pick":        func(s *fold.State, now time.Time) any { return s.Pick(Filter{}, now) },
		"stats":       func(s *fold.State, now time.Time) any { return s.Stats(now) },
		"expired":     func(s *fold.State, now time.Time) any { return s.Expired(now) },
		"nextwake":    func(s *fold.State, now time.Time) any { return s.NextWake(now) },
		"len":         func(s *fold.State, now time.Time) any { return s.Len() },
		"conflicts":   func(s *fold.State, now time.Time) any { return s.Conflicts() },
		"events":      func(s *fold.State, now time.Time) any { return [2]any{s.Events(), s.Last()} },
		"deps":        func(s *fold.State, now time.Time) any { return s.DependencyProblems() },
		"missing":     func(s *fold.State, now time.Time) any { c, ok := s.Card("Z"); return [2]any{c, ok} },
		"missing-key": func(s *fold.State, now time.Time) any { c, ok := s.CardByKey("k-Z"); return [2]any{c, ok} },
	}
	for _, id := range fuzzCards {
		q["card "+id] = func(s *fold.State, now time.Time) any { c, ok := s.Card(id); return [2]any{c, ok} }
		q["claimable "+id] = func(s *fold.State, now time.Time) any { return s.Claimable(id, now) }
		q["key "+id] = func(s *fold.State, now time.Time) any { c, ok := s.CardByKey("k-" + id); return [2]any{c, ok} }
	}
	for _, e := range events {
		if e.RequestID != "" {
			q["receipt "+e.RequestID] = func(s *fold.State, now time.Time) any { r, ok := s.Receipt(e.RequestID); return [2]any{r, ok} }
		}
	}
	return q
}

func render(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkIndexedLoad asks every query of the backlog read through its index
// and read whole, and wants the same answers.
func checkIndexedLoad(t *testing.T, data []byte) {
	dir, events := indexedHistory(t, data)
	last := t0
	if len(events) > 0 {
		last = events[len(events)-1].At
	}
	index := filepath.Join(dir, CacheDir, IndexFile)
	saved, _ := os.ReadFile(index)
	nows := []time.Time{t0, last, last.Add(3 * time.Second), last.Add(time.Hour)}
	// ask opens the backlog afresh and answers q at every time in nows.
	ask := func(indexed bool, q func(*fold.State, time.Time) any) string {
		if indexed && saved != nil {
			if err := os.WriteFile(index, saved, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			os.Remove(index)
		}
		b, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if indexed && saved != nil {
			lazy := b.held().Source() != nil
			if !lazy {
				t.Fatal("the index was not used")
			}
		}
		var out []string
		if err := b.view(func(s *fold.State, _ time.Time) error {
			for _, now := range nows {
				out = append(out, render(t, q(s, now)))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "\n")
	}
	for name, q := range indexQueries(events) {
		if whole, indexed := ask(false, q), ask(true, q); whole != indexed {
			t.Fatalf("%s at %v:\nwhole   %s\nindexed %s", name, nows, whole, indexed)
		}
	}
}

func FuzzIndexedLoad(f *testing.F) {
	for _, seed := range fuzzFoldSeeds() {
		for _, split := range []byte{0, 3, 6, 255} {
			f.Add(append([]byte{split}, seed...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkIndexedLoad(t, data)
	})
}

// TestIndexedWritesMatch runs the same writes against a backlog read
// through its index and one read whole: the ledgers they append must fold
// to the same cards.
func TestIndexedWritesMatch(t *testing.T) {
	for _, seed := range fuzzFoldSeeds() {
		dir, _ := indexedHistory(t, append([]byte{255}, seed...))
		twin := t.TempDir()
		copyDir(t, dir, twin)
		os.Remove(filepath.Join(twin, CacheDir, IndexFile))
		clock := newClock()
		clock.Set(t0.Add(24 * time.Hour))
		run := func(dir string) string {
			b, err := Open(dir, Options{Clock: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx := context.Background()
			for i := range 3 {
				c, err := b.Claim(ctx, ClaimRequest{Mutation: rid(fmt.Sprintf("c%d", i)), Owner: "bench", TTL: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if c != nil {
					if _, err := b.Complete(ctx, LeaseRequest{Mutation: m, ID: c.ID, Owner: "bench", Epoch: c.ClaimEpoch}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, _, err := b.Create(ctx, CreateRequest{Mutation: rid("new"), ID: "N", Title: "new", IdempotencyKey: "k-A"}); err != nil && !isRule(err) {
				t.Fatal(err)
			}
			var out string
			_ = b.view(func(s *fold.State, _ time.Time) error { out = stateJSON(t, s); return nil })
			return out
		}
		if a, b := run(dir), run(twin); a != b {
			t.Fatalf("indexed and whole loads wrote different histories:\n%s\n%s", a, b)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, rel), data, fi.Mode()); err != nil {
			return err
		}
		return os.Chtimes(filepath.Join(to, rel), fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// indexedEnv is a compacted backlog with its index, and a twin without.
func indexedEnv(t *testing.T) (dir string, want string) {
	t.Helper()
	e := busy(t)
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	want = e.foldedJSON()
	return e.dir, want
}

func folded(t *testing.T, dir string) (string, bool) {
	t.Helper()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lazy := b.held().Source() != nil
	var out string
	if err := b.view(func(s *fold.State, _ time.Time) error { out = foldedJSON(t, s); return nil }); err != nil {
		t.Fatal(err)
	}
	return out, lazy
}

func TestIndexIgnoredWhenItDoesNotMatch(t *testing.T) {
	dir, want := indexedEnv(t)
	index := filepath.Join(dir, CacheDir, IndexFile)
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if got, lazy := folded(t, dir); got != want || !lazy {
		t.Fatalf("with a good index: lazy=%v, state differs=%v", lazy, got != want)
	}
	snap := filepath.Join(dir, SnapshotFile)
	cases := map[string]func(){
		"flipped byte": func() {
			bad := append([]byte(nil), good...)
			bad[len(bad)/2] ^= 1
			os.WriteFile(index, bad, 0o644)
		},
		"truncated": func() { os.WriteFile(index, good[:len(good)/2], 0o644) },
		"empty":     func() { os.WriteFile(index, nil, 0o644) },
		"snapshot touched": func() {
			os.WriteFile(index, good, 0o644)
			later := time.Now().Add(time.Hour)
			os.Chtimes(snap, later, later)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			damage()
			got, lazy := folded(t, dir)
			if got != want {
				t.Fatalf("state differs from the fold:\n%s\n%s", got, want)
			}
			if lazy {
				t.Fatal("a mismatched index was used")
			}
			// The load rebuilt it for the snapshot as it is now.
			if _, lazy := folded(t, dir); !lazy {
				t.Fatal("no index was rebuilt")
			}
		})
	}
}

// TestIndexPointingElsewhere forges an index whose checksum and identity
// are right but whose entries point at the wrong lines: every read through
// it is checked, so the call falls back to the whole snapshot and the next
// load rebuilds the index.
func TestIndexPointingElsewhere(t *testing.T) {
	dir, want := indexedEnv(t)
	index := filepath.Join(dir, CacheDir, IndexFile)
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	nc := int(binary.LittleEndian.Uint32(data[28:]))
	if nc < 2 {
		t.Fatalf("want at least two cards, have %d", nc)
	}
	// Swap the line ranges of the first two cards and fix the checksum.
	e0, e1 := data[store.IndexHeaderLen:store.IndexHeaderLen+store.EntryLen], data[store.IndexHeaderLen+store.EntryLen:store.IndexHeaderLen+2*store.EntryLen]
	var tmp [12]byte
	copy(tmp[:], e0[8:20])
	copy(e0[8:20], e1[8:20])
	copy(e1[8:20], tmp[:])
	data = resealIndex(data)
	if err := os.WriteFile(index, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var got string
	if err := b.view(func(s *fold.State, _ time.Time) error {
		snap, _, err := store.EncodeSnapshot(s, nil, nil)
		got = string(snap)
		return err
	}); err != nil {
		t.Fatalf("a wrong index must cost a reload, not an error: %v", err)
	}
	if got != want {
		t.Fatalf("state differs from the fold:\n%s\n%s", got, want)
	}
	// A write through a fresh handle with the forged index also lands right.
	if err := os.WriteFile(index, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	c, err := b2.Update(context.Background(), UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Phase: ptr("P9")}})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "A" || c.Phase != "P9" || c.Title != "card A" {
		t.Fatalf("updated %+v", c)
	}
}

func TestIndexEqualsWholeLoadOnSeeds(t *testing.T) {
	for i, seed := range fuzzFoldSeeds() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkIndexedLoad(t, append([]byte{byte(len(seed) / 8)}, seed...))
		})
	}
}

// resealIndex recomputes the block checksums of an index file edited in
// place, so the edit passes them.
func resealIndex(data []byte) []byte {
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	body := append([]byte(nil), data[:len(data)-8-4*n]...)
	return store.SealIndex(body)
}

// TestIndexBlockDamage flips a byte in each block of a multi-block index
// in turn: a block is checked when first read, so whichever block is
// damaged, the answers are the whole snapshot's and the index is rebuilt.
func TestIndexBlockDamage(t *testing.T) {
	e := newEnv(t)
	noCompaction(e)
	for i := range 300 {
		e.create(fmt.Sprintf("card-%03d", i), func(r *CreateRequest) { r.IdempotencyKey = fmt.Sprintf("key-%03d", i) })
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	want := e.foldedJSON()
	wantReady := ""
	index := filepath.Join(e.dir, CacheDir, IndexFile)
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	blocks := int(binary.LittleEndian.Uint32(good[len(good)-8:]))
	if blocks < 3 {
		t.Fatalf("index has %d blocks; the test needs several", blocks)
	}
	for b := range blocks {
		bad := append([]byte(nil), good...)
		bad[b*store.IndexBlock+7] ^= 0x40
		if err := os.WriteFile(index, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		// A claim-order walk, a lookup by key, then everything.
		bl, err := Open(e.dir, Options{Clock: e.clk.Now})
		if err != nil {
			t.Fatalf("block %d: %v", b, err)
		}
		ready, err := bl.Ready(Filter{Limit: 3})
		if err != nil {
			t.Fatalf("block %d: ready: %v", b, err)
		}
		if got := render(t, ready); wantReady == "" {
			wantReady = got
		} else if got != wantReady {
			t.Fatalf("block %d: ready %s, want %s", b, got, wantReady)
		}
		if _, err := bl.Ready(Filter{}); err != nil {
			t.Fatalf("block %d: ready: %v", b, err)
		}
		var got string
		if err := bl.view(func(s *fold.State, _ time.Time) error {
			// Every id and key looked up: every block is read.
			for i := range 300 {
				id, key := fmt.Sprintf("card-%03d", i), fmt.Sprintf("key-%03d", i)
				if c, ok := s.CardByKey(key); !ok || c.ID != id {
					return fmt.Errorf("%s gives %v %v", key, c.ID, ok)
				}
				if c, ok := s.Card(id); !ok || c.ID != id {
					return fmt.Errorf("%s gives %v %v", id, c.ID, ok)
				}
			}
			snap, _, err := store.EncodeSnapshot(s, nil, nil)
			got = string(snap)
			return err
		}); err != nil {
			t.Fatalf("block %d: %v", b, err)
		}
		if got != want {
			t.Fatalf("block %d: state differs from the fold", b)
		}
		bl.Close()
		if now, err := os.ReadFile(index); err == nil && string(now) == string(bad) {
			t.Fatalf("block %d: the damaged index is still in place", b)
		}
	}
}
