package lock

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDeletedWhileHeld: a lock file deleted (git clean -X, a user clearing
// a "stale" lock) while one holder has it must not let a second in.
func TestDeletedWhileHeld(t *testing.T) {
	path := lockPath(t)
	a, b := New(path), New(path)
	ctx := context.Background()
	if err := a.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("second lock after the file was deleted under the holder: %v, want ErrTimeout", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, time.Second); err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the lock file was not recreated: %v", err)
	}
	_ = b.Release()
}

// TestReplacedBeforeGrant: a File whose descriptor still names a file that
// has since been replaced locks the file now at the path, so it excludes a
// locker that opened the new file.
func TestReplacedBeforeGrant(t *testing.T) {
	path := lockPath(t)
	a, b := New(path), New(path)
	ctx := context.Background()
	if err := a.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// b fails once, keeping its descriptor on the old file open.
	if err := b.Acquire(ctx, 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("busy: %v", err)
	}
	_ = a.Release()
	// The file is replaced (a pull of a force-added lock).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	held, err := b.file.held.Stat()
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(held, now) {
		t.Fatal("the lock is held on a file no longer at its path")
	}
	_ = b.Release()
}

// TestExclusionWhileTheFileChurns: holders never overlap while another
// goroutine deletes and recreates the lock file as fast as it can.
func TestExclusionWhileTheFileChurns(t *testing.T) {
	path := lockPath(t)
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Remove(path)
			if f, err := os.Create(path); err == nil {
				f.Close()
			}
		}
	}()
	const workers, rounds = 6, 200
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := New(path)
			for i := 0; i < rounds; i++ {
				if err := l.Acquire(context.Background(), 10*time.Second); err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(20 * time.Microsecond)
				inside.Add(-1)
				if err := l.Release(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	churn.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d overlapping holders while the lock file was deleted and recreated", n)
	}
}
