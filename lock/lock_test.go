package lock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func lockPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "lock")
}

func TestExclusion(t *testing.T) {
	path := lockPath(t)
	a, b := New(path), New(path)
	ctx := context.Background()
	if a.Path() != path {
		t.Fatalf("Path = %q", a.Path())
	}
	if err := a.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// Try once.
	err := b.Acquire(ctx, 0)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("second lock, no wait: %v, want ErrTimeout", err)
	}
	// Wait a little.
	start := time.Now()
	err = b.Acquire(ctx, 50*time.Millisecond)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("second lock, 50ms wait: %v, want ErrTimeout", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("gave up after %s, before the 50ms timeout", waited)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 0); err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	if err := a.Acquire(ctx, 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("first lock while second holds: %v", err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	// Releasing twice is harmless.
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestReleaseWakesWaiter(t *testing.T) {
	path := lockPath(t)
	a, b := New(path), New(path)
	ctx := context.Background()
	if err := a.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Acquire(ctx, 10*time.Second) }()
	select {
	case err := <-got:
		t.Fatalf("waiter returned %v while the lock was held", err)
	default:
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestContextCancellation(t *testing.T) {
	path := lockPath(t)
	holder, waiter := New(path), New(path)
	if err := holder.Acquire(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	defer holder.Release()

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	start := time.Now()
	go func() { got <- waiter.Acquire(ctx, time.Minute) }()
	cancel()
	err := <-got
	if !errors.Is(err, context.Canceled) || err != ctx.Err() {
		t.Fatalf("cancelled wait: %v, want the context's error", err)
	}
	if errors.Is(err, ErrTimeout) {
		t.Fatal("a cancellation must not read as a timeout")
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("cancellation did not end the wait")
	}

	// A deadline on the context that ends before the timeout.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if err := waiter.Acquire(dctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context deadline: %v, want DeadlineExceeded", err)
	}
}

func TestTimeoutErrorNamesTheLock(t *testing.T) {
	path := lockPath(t)
	a, b := New(path), New(path)
	if err := a.Acquire(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	err := b.Acquire(context.Background(), time.Millisecond)
	if !errors.Is(err, ErrTimeout) || err.Error() != fmt.Sprintf("%v lock after 1ms", ErrTimeout) {
		t.Fatalf("timeout error = %q", err)
	}
}

// TestFileIsNeverDeleted: the lock file exists from the first Acquire on and
// stays the same inode through any number of lock cycles.
func TestFileIsNeverDeleted(t *testing.T) {
	path := lockPath(t)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("New created the file early: %v", err)
	}
	l := New(path)
	if err := l.Acquire(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(path)
	if err != nil {
		t.Fatalf("lock file missing while held: %v", err)
	}
	other := New(path)
	for i := 0; i < 5; i++ {
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("lock file gone after release: %v", err)
		}
		if !os.SameFile(first, fi) {
			t.Fatal("lock file was replaced")
		}
		if err := other.Acquire(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		if err := other.Release(); err != nil {
			t.Fatal(err)
		}
		if err := l.Acquire(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("lock file gone: %v", err)
	}
}

func TestMissingDirectory(t *testing.T) {
	l := New(filepath.Join(t.TempDir(), "no", "such", "dir", "lock"))
	err := l.Acquire(context.Background(), time.Second)
	if err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("lock in a missing directory: %v, want an open error", err)
	}
}

// TestMutualExclusionUnderContention: many goroutines, each with its own
// File, never overlap inside the lock.
func TestMutualExclusionUnderContention(t *testing.T) {
	path := lockPath(t)
	const workers, rounds = 8, 50
	var inside, entered atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := New(path)
			for i := 0; i < rounds; i++ {
				if err := l.Acquire(context.Background(), 30*time.Second); err != nil {
					errs <- err
					return
				}
				if n := inside.Add(1); n != 1 {
					errs <- fmt.Errorf("%d holders at once", n)
				}
				entered.Add(1)
				inside.Add(-1)
				if err := l.Release(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := entered.Load(); got != workers*rounds {
		t.Fatalf("entered %d times, want %d", got, workers*rounds)
	}
}

// TestExclusionAcrossProcesses holds the lock in a child process.
func TestExclusionAcrossProcesses(t *testing.T) {
	if os.Getenv("BL_LOCK_TEST_HOLDER") != "" {
		t.Skip("running as the holder")
	}
	path := lockPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), "BL_LOCK_TEST_HOLDER="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "locked" {
		t.Fatalf("holder did not take the lock: %q %v", sc.Text(), sc.Err())
	}
	l := New(path)
	if err := l.Acquire(context.Background(), 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("lock held by another process: %v, want ErrTimeout", err)
	}
	stdin.Close() // the holder releases and exits
	if err := l.Acquire(context.Background(), 30*time.Second); err != nil {
		t.Fatalf("lock after the holder exited: %v", err)
	}
	l.Release()
}

// TestLockHolderProcess is the child of TestExclusionAcrossProcesses: it
// takes the lock, says so, and holds it until its stdin closes.
func TestLockHolderProcess(t *testing.T) {
	path := os.Getenv("BL_LOCK_TEST_HOLDER")
	if path == "" {
		t.Skip("only runs as a child process")
	}
	l := New(path)
	if err := l.Acquire(context.Background(), 0); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadByte()
	_ = l.Release()
}
