package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

// TestReplacedWhileQueued: a File queued on the lock file while a locker
// of the file alone holds it (an older bl, which does not lock the
// directory) must not end up holding the old file once it is replaced.
// The file is replaced while it waits and another file-only locker takes
// the new one; when the first lets go, the waiter is granted a lock on a
// file no longer at the path, and only the check against the path (atPath)
// sends it on to wait for the new file's holder. The directory lock cannot
// help here: the file-only lockers never take it.
func TestReplacedWhileQueued(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd to see the waiter open the file")
	}
	path := lockPath(t)
	old := newFlock(path, os.O_CREATE|os.O_RDWR)
	if ok, err := tryLock(old); !ok || err != nil {
		t.Fatalf("first file-only lock: %v %v", ok, err)
	}
	oldInfo, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b := New(path)
	got := make(chan error, 1)
	go func() { got <- b.Acquire(context.Background(), time.Hour) }()
	// Replace the file only once b's waiter has it open: then two of
	// this process's descriptors are on it.
	for openOn(t, oldInfo) < 2 {
		select {
		case err := <-got:
			t.Fatalf("acquired a lock the file-only holder has: %v", err)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	cur := newFlock(path, os.O_RDWR)
	if ok, err := tryLock(cur); !ok || err != nil {
		t.Fatalf("file-only lock of the new file: %v %v", ok, err)
	}
	// b is granted the old file now; it must go on waiting for cur.
	if err := old.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := cur.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	held, err := b.file.held.Stat()
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(held, now) {
		t.Fatal("the lock is held on the replaced file while another locker held the file at the path")
	}
}

// openOn counts this process's descriptors open on the file fi.
func openOn(t *testing.T, fi os.FileInfo) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if other, err := os.Stat(filepath.Join("/proc/self/fd", e.Name())); err == nil && os.SameFile(fi, other) {
			n++
		}
	}
	return n
}
