package ledger

import (
	"testing"
	"time"
)

// BenchmarkDiagnose is bl doctor on a compacted backlog with a ledger
// tail: it reads every line of every file, and folds the archived events
// again to hold the snapshot to them.
func BenchmarkDiagnose(b *testing.B) {
	for _, size := range []struct {
		name          string
		cards, events int
	}{{"1k-10k", 1_000, 10_000}, {"10k-100k", 10_000, 100_000}} {
		b.Run(size.name, func(b *testing.B) {
			dir := b.TempDir()
			writeHistory(b, dir, size.cards, size.events)
			b.ResetTimer()
			for b.Loop() {
				rep, err := Diagnose(dir, time.Now())
				if err != nil || rep.Corrupt {
					b.Fatalf("diagnose: %+v %v", rep, err)
				}
			}
		})
	}
}
