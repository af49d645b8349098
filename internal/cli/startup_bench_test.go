package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// BenchmarkRunVersion is the in-process cost of a bl call that does no IO:
// building the command line parser, parsing, and running version.
func BenchmarkRunVersion(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if code := Main(Extensions{}, []string{"version"}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

// BenchmarkRunReady1k is bl ready --limit 10 on a backlog of 1000 cards,
// in process: open, fold, select, print.
func BenchmarkRunReady1k(b *testing.B) {
	dir := b.TempDir()
	if code := Main(Extensions{}, []string{"--dir", dir, "init"}, io.Discard, io.Discard); code != 0 {
		b.Fatal("init failed")
	}
	for i := 0; i < 1000; i++ {
		if code := Main(Extensions{}, []string{"--dir", dir, "--actor", "bench", "create", "--title", "card", "--priority", strconv.Itoa(i % 10)}, io.Discard, io.Discard); code != 0 {
			b.Fatal("create failed")
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := Main(Extensions{}, []string{"--dir", dir, "ready", "--limit", "10"}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

// bigBacklog writes a backlog of n cards straight to its ledger (no fsync
// per line) and compacts it, as a long-lived backlog stands: the
// snapshot and its index hold the cards.
func bigBacklog(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), ".backlog")
	if _, err := ledger.Init(dir); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, ledger.LedgerFile))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	at := time.Now().Add(-48 * time.Hour).UTC()
	for i := range n {
		at = at.Add(time.Microsecond)
		t, p := "card number "+strconv.Itoa(i), i%10
		line, err := ledger.EncodeLine(&ledger.Event{V: 1, At: at, ID: fmt.Sprintf("%016x", i+1), Actor: "bench",
			Op: ledger.OpCreate, Card: fmt.Sprintf("P%06d", i), Fields: &ledger.Fields{Title: &t, Priority: &p}})
		if err != nil {
			b.Fatal(err)
		}
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	bl, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := bl.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	bl.Close()
	return dir
}

// BenchmarkListJSON100k is bl list --json of 100,000 cards in process:
// its bytes and allocations per call guard the per-card cost (a list once
// built its 45 MB of output in one buffer, sized for twice that).
func BenchmarkListJSON100k(b *testing.B) {
	dir := bigBacklog(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := Main(Extensions{}, []string{"--dir", dir, "list", "--json"}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

// BenchmarkShow100k is bl show of one card among 100,000 in process: it
// must read that card and what names it, not every card.
func BenchmarkShow100k(b *testing.B) {
	dir := bigBacklog(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := Main(Extensions{}, []string{"--dir", dir, "show", fmt.Sprintf("P%06d", (i*7919)%100_000)}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

// BenchmarkParser is what kong costs a call before its command runs:
// building the parser for the one command named, and parsing.
func BenchmarkParser(b *testing.B) {
	for _, args := range [][]string{{"version"}, {"heartbeat", "--id", "A1", "--owner", "w", "--epoch", "3"}, {"create", "--title", "t", "--priority", "2"},
		{"ready", "--limit", "10"}, {"show", "C000123"}, {"diff", "HEAD~1", "HEAD"}} {
		b.Run(args[0], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var c CLI
				p, err := newParser(&c, &App{}, io.Discard, io.Discard, args[0], map[string]any{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Parse(args); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The same line through the fast parse (fastparse.go).
		b.Run("fast/"+args[0], func(b *testing.B) {
			b.ReportAllocs()
			getenv := func(string) string { return "" }
			for i := 0; i < b.N; i++ {
				if _, _, ok := fastParse(args[0], args, getenv); !ok {
					b.Fatal("not taken by the fast parse")
				}
			}
		})
	}
}
