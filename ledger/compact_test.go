package ledger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// foldedJSON renders everything a fold produces, for comparing states.
func foldedJSON(t testing.TB, s *fold.State) string {
	t.Helper()
	b, _, err := store.EncodeSnapshot(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (e *env) foldedJSON() string {
	e.t.Helper()
	var out string
	if err := e.open().view(func(s *fold.State, _ time.Time) error {
		out = foldedJSON(e.t, s)
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// busy makes a history with every kind of event and a recorded conflict.
func busy(t *testing.T) *env {
	e := seeded(t)
	if _, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: rid("hb-1"), ID: "A", Owner: "w1", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "B", Fields: Fields{Phase: ptr("M2")}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

func TestCompactKeepsState(t *testing.T) {
	e := busy(t)
	before := e.foldedJSON()
	lines := len(e.lines())
	lastID := e.lastEvent().ID
	res, err := e.b.Compact(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq != 1 || res.Events != lines || res.Cards != 3 || !strings.HasPrefix(res.Archive, "archive/") || !strings.HasSuffix(res.Archive, lastID+".jsonl") {
		t.Fatalf("result = %+v", res)
	}
	if len(e.bytes()) != 0 {
		t.Fatal("ledger not emptied")
	}
	if after := e.foldedJSON(); after != before {
		t.Fatalf("state changed by compaction:\nbefore %s\nafter  %s", before, after)
	}
	// The archive holds exactly the old ledger lines.
	arch, _ := os.ReadFile(filepath.Join(e.dir, res.Archive))
	if n := len(splitLines(arch)); n != lines {
		t.Fatalf("archive has %d lines, want %d", n, lines)
	}
	// Writes go on, ordered after the snapshot; replays still answer.
	before = e.foldedJSON()
	if _, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: rid("hb-1"), ID: "A", Owner: "w1", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if len(e.bytes()) != 0 || e.foldedJSON() != before {
		t.Fatal("a replayed request id appended after compaction")
	}
	e.create("D")
	e.claim("D", "w2", time.Minute)
}

func TestCompactTwiceAndNothingToDo(t *testing.T) {
	e := busy(t)
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.b.Compact(e.ctx)
	if err != nil || res.Seq != 1 || res.Events != 0 {
		t.Fatalf("empty compaction = %+v, %v", res, err)
	}
	e.create("D")
	res, err = e.b.Compact(e.ctx)
	if err != nil || res.Seq != 2 || res.Events != 1 {
		t.Fatalf("second compaction = %+v, %v", res, err)
	}
	if c := e.open(); c.held().Len() != 4 {
		t.Fatalf("reopened state has %d cards", c.held().Len())
	}
}

func TestSnapshotBytesAreDeterministic(t *testing.T) {
	e := busy(t)
	other := t.TempDir()
	if _, err := Init(other); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, LedgerFile), e.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(other, Options{Clock: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	s1, _ := os.ReadFile(filepath.Join(e.dir, SnapshotFile))
	s2, _ := os.ReadFile(filepath.Join(other, SnapshotFile))
	if !bytes.Equal(s1, s2) {
		t.Fatalf("snapshots differ:\n%s\n%s", s1, s2)
	}
	if n := len(splitLines(s1)); n != 1+3+1 { // header, 3 cards, 1 receipt
		t.Fatalf("snapshot has %d lines:\n%s", n, s1)
	}
}

type crash struct{ stage string }

// TestCompactCrashAtEveryStep stops a compaction at each failpoint, as a
// kill -9 would, then checks a fresh handle sees the same state, can write,
// and that a later compaction finishes the job.
func TestCompactCrashAtEveryStep(t *testing.T) {
	for _, stage := range []string{"compact-after-archive", "compact-mid-snapshot", "compact-after-snapshot", "compact-after-truncate"} {
		t.Run(stage, func(t *testing.T) {
			e := busy(t)
			want := e.foldedJSON()
			b, err := Open(e.dir, Options{Clock: e.clk.Now, Failpoint: func(s string) {
				if s == stage {
					panic(crash{s})
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if r := recover(); r != (crash{stage}) {
						t.Fatalf("recovered %v", r)
					}
				}()
				_, _ = b.Compact(e.ctx)
			}()
			if got := e.foldedJSON(); got != want {
				t.Fatalf("state after crash at %s:\n%s\nwant\n%s", stage, got, want)
			}
			rep, err := Diagnose(e.dir, e.clk.Now())
			if err != nil || rep.Corrupt {
				t.Fatalf("doctor after crash: %+v, %v", rep, err)
			}
			e.b = e.open()
			e.create("D")
			if _, err := e.b.Compact(e.ctx); err != nil {
				t.Fatal(err)
			}
			c := e.open()
			if c.held().Len() != 4 || len(e.bytes()) != 0 {
				t.Fatalf("after recovery: %d cards, ledger %d bytes", c.held().Len(), len(e.bytes()))
			}
			if _, err := e.b.Heartbeat(e.ctx, HeartbeatRequest{Mutation: rid("hb-1"), ID: "A", Owner: "w1", Epoch: 1}); err != nil {
				t.Fatal(err)
			}
			if len(e.bytes()) != 0 {
				t.Fatal("replay appended after recovery")
			}
		})
	}
}

func TestAutoCompaction(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"compact_bytes":2000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
	for i := range 40 {
		e.create(fmt.Sprintf("C%02d", i))
	}
	if n := len(e.bytes()); n >= 2000 {
		t.Fatalf("ledger is %d bytes, past compact_bytes", n)
	}
	if e.b.compactions() < 2 {
		t.Fatalf("only %d compactions", e.b.compactions())
	}
	if c := e.open(); c.held().Len() != 40 {
		t.Fatalf("%d cards after auto compaction", c.held().Len())
	}
}

// TestCompactWhileOthersWork runs claimers, readers and a compactor
// against one directory with separate handles: every create and claim is
// kept, and no reader ever sees fewer cards than were acknowledged before
// it started.
func TestCompactWhileOthersWork(t *testing.T) {
	e := newEnv(t)
	const n = 60
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := e.open()
			for i := range n / 3 {
				if _, _, err := b.Create(ctx, CreateRequest{Mutation: m, ID: fmt.Sprintf("W%d-%02d", w, i), Title: "x"}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked++
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	var side sync.WaitGroup
	side.Add(2)
	go func() { // compactor
		defer side.Done()
		b := e.open()
		for { // at least once, however soon the writers finish
			if _, err := b.Compact(ctx); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	go func() { // reader with fresh handles
		defer side.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			mu.Lock()
			floor := acked
			mu.Unlock()
			b, err := Open(e.dir, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			if got := b.held().Len(); got < floor {
				t.Errorf("reader saw %d cards, %d were acknowledged", got, floor)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	side.Wait()
	if c := e.open(); c.held().Len() != n {
		t.Fatalf("%d cards, want %d", c.held().Len(), n)
	}
	var hdr wire.SnapshotHeader
	data, _ := os.ReadFile(filepath.Join(e.dir, SnapshotFile))
	line, _ := wire.CheckFrame(splitLines(data)[0])
	if err := json.Unmarshal(line, &hdr); err != nil || hdr.Seq == 0 {
		t.Fatalf("snapshot header %+v, %v", hdr, err)
	}
}
