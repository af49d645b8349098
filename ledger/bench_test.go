package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// noCompaction turns automatic compaction off, so a benchmark measures the
// append path alone.
func noCompaction(e *env) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"compact_bytes":-1}`+"\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.b = e.open()
}

// BenchmarkAppend measures one durable append: lock, catch up, validate,
// one write, fsync, unlock. Each op is a heartbeat on a claimed card.
func BenchmarkAppend(b *testing.B) {
	e := newEnv(b)
	noCompaction(e)
	e.create("A")
	e.claim("A", "w", time.Hour)
	r := HeartbeatRequest{Mutation: m, ID: "A", Owner: "w", Epoch: 1}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.b.Heartbeat(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreate measures a durable create with a generated id.
func BenchmarkCreate(b *testing.B) {
	e := newEnv(b)
	noCompaction(e)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := e.b.Create(ctx, CreateRequest{Mutation: m, Title: "benchmark card", Labels: []string{"bench"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFold measures folding events into state; events/s is the
// number that matters.
func BenchmarkFold(b *testing.B) {
	evs := wire.BenchEvents(10_000)
	if s := fold.Fold(evs); len(s.Conflicts()) != 0 {
		b.Fatalf("benchmark history has conflicts: %+v", s.Conflicts()[0])
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fold.Fold(evs)
	}
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkOpen measures reading, decoding and folding a ledger file.
func BenchmarkOpen(b *testing.B) {
	e := newEnv(b)
	var data []byte
	evs := wire.BenchEvents(5_000)
	for _, ev := range evs {
		line, err := EncodeLine(ev)
		if err != nil {
			b.Fatal(err)
		}
		data = append(data, line...)
	}
	e.writeLedger(data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Open(e.dir, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// writeHistory writes a backlog of cards cards whose history holds events
// events (creates, then claim, heartbeat and release rounds), compacts it
// and appends a ledger tail of half its compaction threshold, the average
// tail a backlog carries between two automatic compactions.
func writeHistory(b *testing.B, dir string, cards, events int) {
	b.Helper()
	if _, err := Init(dir); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LedgerFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now().Add(-48 * time.Hour).UTC()
	n := 0
	var buf []byte
	emit := func(e *Event) {
		at = at.Add(time.Microsecond)
		n++
		e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", n), at, "bench"
		line, err := EncodeLine(e)
		if err != nil {
			b.Fatal(err)
		}
		buf = append(buf, line...)
		if len(buf) > 1<<20 {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	id := func(i int) string { return fmt.Sprintf("C%06d", i) }
	for i := range cards {
		emit(&Event{Op: OpCreate, Card: id(i), Fields: &Fields{Title: strp("card number " + id(i)), Priority: intp(i % 10), Labels: strs("x")}})
	}
	epoch := make([]int64, cards)
	for i := 0; n < events; i++ {
		c := i % cards
		epoch[c]++
		emit(&Event{Op: OpClaim, Card: id(c), Owner: "w", TTLSeconds: 600, ExpectVersion: 1 + 3*(epoch[c]-1), Epoch: epoch[c]})
		emit(&Event{Op: OpHeartbeat, Card: id(c), Owner: "w", Epoch: epoch[c]})
		emit(&Event{Op: OpRelease, Card: id(c), Owner: "w", Epoch: epoch[c]})
	}
	if _, err := f.Write(buf); err != nil {
		b.Fatal(err)
	}
	f.Close()
	bl, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Close()
	ctx := context.Background()
	if _, err := bl.Compact(ctx); err != nil {
		b.Fatal(err)
	}
	for i := 0; ; i++ {
		fi, err := os.Stat(filepath.Join(dir, LedgerFile))
		if err != nil {
			b.Fatal(err)
		}
		if fi.Size() >= DefaultCompactBytes/2 {
			return
		}
		c, err := bl.Claim(ctx, ClaimRequest{Mutation: m, ID: id(i % cards), Owner: "tail", TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bl.Heartbeat(ctx, HeartbeatRequest{Mutation: m, ID: c.ID, Owner: "tail", Epoch: c.ClaimEpoch}); err != nil {
			b.Fatal(err)
		}
		if _, err := bl.Release(ctx, LeaseRequest{Mutation: m, ID: c.ID, Owner: "tail", Epoch: c.ClaimEpoch}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBacklog measures what each bl call does in process, on a
// compacted backlog with a typical ledger tail: open (snapshot through its
// index, plus the tail), ready --limit 10, one durable append (a
// heartbeat), and a claim with its release. The large size takes a while
// to build.
func BenchmarkBacklog(b *testing.B) {
	for _, size := range []struct {
		name          string
		cards, events int
	}{{"1k", 1_000, 10_000}, {"100k-1M", 100_000, 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			dir := b.TempDir()
			writeHistory(b, dir, size.cards, size.events)
			if os.Getenv("BL_BENCH_DEBUG") != "" {
				fi, err := os.Stat(filepath.Join(dir, CacheDir, IndexFile))
				b.Logf("index: %v %v", fi, err)
			}
			b.Run("open", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					bl, err := Open(dir, Options{})
					if err != nil {
						b.Fatal(err)
					}
					bl.Close()
				}
			})
			b.Run("open+ready10", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					bl, err := Open(dir, Options{})
					if err != nil {
						b.Fatal(err)
					}
					if cards, err := bl.Ready(Filter{Limit: 10}); err != nil || len(cards) != 10 {
						b.Fatalf("ready: %d cards, %v", len(cards), err)
					}
					bl.Close()
				}
			})
			b.Run("heartbeat", func(b *testing.B) {
				// One durable append on an open backlog; automatic
				// compactions run as the tail grows, as they would.
				ctx := context.Background()
				bl, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer bl.Close()
				c, err := bl.Claim(ctx, ClaimRequest{Mutation: m, Owner: "bench-hb", TTL: time.Hour})
				if err != nil || c == nil {
					b.Fatalf("claim: %v %v", c, err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := bl.Heartbeat(ctx, HeartbeatRequest{Mutation: m, ID: c.ID, Owner: "bench-hb", Epoch: c.ClaimEpoch}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("open+claim+release", func(b *testing.B) {
				ctx := context.Background()
				for i := 0; i < b.N; i++ {
					bl, err := Open(dir, Options{})
					if err != nil {
						b.Fatal(err)
					}
					c, err := bl.Claim(ctx, ClaimRequest{Mutation: m, Owner: "bench", TTL: time.Hour})
					if err != nil || c == nil {
						b.Fatalf("claim: %v %v", c, err)
					}
					if _, err := bl.Release(ctx, LeaseRequest{Mutation: m, ID: c.ID, Owner: "bench", Epoch: c.ClaimEpoch}); err != nil {
						b.Fatal(err)
					}
					bl.Close()
				}
			})
		})
	}
}
