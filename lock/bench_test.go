package lock

import (
	"context"
	"testing"
)

// BenchmarkAcquireRelease is one uncontended lock cycle, as every write
// makes: the directory and the lock file, each checked against its path.
func BenchmarkAcquireRelease(b *testing.B) {
	l := New(lockPath(b))
	ctx := context.Background()
	for b.Loop() {
		if err := l.Acquire(ctx, 0); err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
}
