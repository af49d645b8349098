package cli

import (
	"io"
	"strconv"
	"testing"
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
