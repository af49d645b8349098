package lock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func lockPath(t testing.TB) string {
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
	if !errors.Is(err, ErrTimeout) || err.Error() != fmt.Sprintf("lock: timed out waiting for %s after 1ms", path) {
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
	path := lockPath(t)
	cmd := exec.Command(os.Args[0])
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

// holdUntilStdinCloses is the child of TestExclusionAcrossProcesses: it
// takes the lock, says so, and holds it until its stdin closes.
func holdUntilStdinCloses(path string) int {
	l := New(path)
	if err := l.Acquire(context.Background(), 0); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadByte()
	_ = l.Release()
	return 0
}

// TestMain doubles as the body of the helper processes that
// TestExclusionAcrossProcesses and TestExclusionAcrossManyProcesses start
// from this test binary.
func TestMain(m *testing.M) {
	if path := os.Getenv("BL_LOCK_TEST_HOLDER"); path != "" {
		os.Exit(holdUntilStdinCloses(path))
	}
	if spec := os.Getenv("BL_LOCK_TEST_HAMMER"); spec != "" {
		os.Exit(hammer(spec))
	}
	if os.Getenv("GORACE") == "" {
		// The helpers are this binary: under -race each would sleep a
		// second as it exits.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

// waitUntilFree polls a fresh File with try-once Acquires until one succeeds,
// then releases it. Abandoned waits still queued in the kernel drop the lock
// as soon as they get it, so this must succeed shortly after the last real
// holder lets go.
func waitUntilFree(t *testing.T, path string) {
	t.Helper()
	l := New(path)
	deadline := patience(t)
	for {
		err := l.Acquire(context.Background(), 0)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("lock still held near the test deadline, long after every holder released it")
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// patience is when a wait for something that must happen gives up: a
// tenth short of the test binary's deadline, so a hang fails with its own
// message; a slow machine only makes the wait longer.
func patience(t *testing.T) time.Time {
	if end, ok := t.Deadline(); ok {
		return time.Now().Add(time.Until(end) * 9 / 10)
	}
	return time.Now().Add(time.Hour)
}

// waitForGoroutines polls until no more than n goroutines run, so a wait
// left behind has visibly finished.
func waitForGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := patience(t)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, want at most %d: an abandoned wait never ended", runtime.NumGoroutine(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAbandonedWaitNeverKeepsTheLock: a wait that ends by timeout or by
// cancellation stays queued in the kernel, but once the holder releases, the
// lock is free again for anyone else, and nothing is left running.
func TestAbandonedWaitNeverKeepsTheLock(t *testing.T) {
	for _, how := range []string{"timeout", "cancel"} {
		t.Run(how, func(t *testing.T) {
			path := lockPath(t)
			base := runtime.NumGoroutine()
			holder, waiter := New(path), New(path)
			if err := holder.Acquire(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "timeout":
				if err := waiter.Acquire(context.Background(), 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
					t.Fatalf("wait on a held lock: %v, want ErrTimeout", err)
				}
			case "cancel":
				ctx, cancel := context.WithCancel(context.Background())
				got := make(chan error, 1)
				go func() { got <- waiter.Acquire(ctx, time.Minute) }()
				time.Sleep(20 * time.Millisecond) // let it queue
				cancel()
				if err := <-got; !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled wait: %v", err)
				}
			}
			if err := holder.Release(); err != nil {
				t.Fatal(err)
			}
			waitUntilFree(t, path)
			waitForGoroutines(t, base)
			// The File that gave up still works.
			if err := waiter.Acquire(context.Background(), 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := holder.Acquire(context.Background(), 0); !errors.Is(err, ErrTimeout) {
				t.Fatalf("holder while the waiter holds: %v", err)
			}
			if err := waiter.Release(); err != nil {
				t.Fatal(err)
			}
			waitUntilFree(t, path)
		})
	}
}

// TestAcquireAgainAfterAbandonedWait: a File whose earlier wait is still
// queued in the kernel can wait again, and gets the lock when it frees up.
func TestAcquireAgainAfterAbandonedWait(t *testing.T) {
	path := lockPath(t)
	base := runtime.NumGoroutine()
	holder, waiter := New(path), New(path)
	if err := holder.Acquire(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := waiter.Acquire(context.Background(), 5*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Fatalf("wait %d on a held lock: %v, want ErrTimeout", i, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		err := waiter.Acquire(ctx, time.Minute)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait %d with a context deadline: %v", i, err)
		}
	}
	if err := waiter.Acquire(context.Background(), 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("try once on a held lock: %v, want ErrTimeout", err)
	}
	// Only one wait is queued for the File however often it gave up.
	if n := runtime.NumGoroutine(); n > base+1 {
		t.Fatalf("%d goroutines after repeated waits, want at most %d", n, base+1)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Acquire(context.Background(), time.Minute) }()
	time.Sleep(10 * time.Millisecond)
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("wait after abandoned waits: %v", err)
	}
	if err := holder.Acquire(context.Background(), 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("holder while the waiter holds: %v", err)
	}
	if err := waiter.Release(); err != nil {
		t.Fatal(err)
	}
	waitUntilFree(t, path)
	waitForGoroutines(t, base)
}

// TestTryOnceAfterAbandonedWait: when the holder releases, the lock may come
// through to a wait the File gave up on a moment earlier; a try once by the
// same File right after the release still gets it.
func TestTryOnceAfterAbandonedWait(t *testing.T) {
	path := lockPath(t)
	holder, waiter := New(path), New(path)
	for i := 0; i < 100; i++ {
		// Not a try once: the waiter's wait from the round before may be
		// passing the lock through just now.
		if err := holder.Acquire(context.Background(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := waiter.Acquire(context.Background(), 100*time.Microsecond); !errors.Is(err, ErrTimeout) {
				t.Fatalf("round %d, wait on a held lock: %v", i, err)
			}
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Microsecond)
			err := waiter.Acquire(ctx, time.Minute)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("round %d, wait on a held lock: %v", i, err)
			}
		}
		if err := holder.Release(); err != nil {
			t.Fatal(err)
		}
		if err := waiter.Acquire(context.Background(), 0); err != nil {
			t.Fatalf("round %d, try once after the release: %v", i, err)
		}
		if err := waiter.Release(); err != nil {
			t.Fatal(err)
		}
	}
	waitUntilFree(t, path)
}

// TestAcquireWhileHeld: acquiring a lock the File already holds succeeds at
// once, and one Release drops it.
func TestAcquireWhileHeld(t *testing.T) {
	path := lockPath(t)
	l, other := New(path), New(path)
	for i := 0; i < 2; i++ {
		if err := l.Acquire(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := other.Acquire(context.Background(), 0); err != nil {
		t.Fatalf("after one release: %v", err)
	}
	other.Release()
}

// TestMutualExclusionWithAbandonedWaits: goroutines with their own Files,
// some of which give up on short timeouts or cancelled contexts, never
// overlap inside the lock, and the lock is free once they are done.
func TestMutualExclusionWithAbandonedWaits(t *testing.T) {
	path := lockPath(t)
	base := runtime.NumGoroutine()
	const workers, rounds = 16, 100
	var inside, entered, timedOut, cancelled atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			l := New(path)
			for i := 0; i < rounds; i++ {
				if rng.IntN(10) == 0 {
					l = New(path) // a File abandoned with a wait still queued
				}
				timeout := []time.Duration{0, 20 * time.Microsecond, 200 * time.Microsecond, time.Millisecond, 10 * time.Second}[rng.IntN(5)]
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(4) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(500))*time.Microsecond)
				}
				err := l.Acquire(ctx, timeout)
				cancel()
				switch {
				case errors.Is(err, ErrTimeout):
					timedOut.Add(1)
					continue
				case errors.Is(err, context.DeadlineExceeded):
					cancelled.Add(1)
					continue
				case err != nil:
					errs <- err
					return
				}
				if n := inside.Add(1); n != 1 {
					errs <- fmt.Errorf("%d holders at once", n)
					return
				}
				entered.Add(1)
				if rng.IntN(2) == 0 {
					time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
				} else {
					runtime.Gosched()
				}
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
	t.Logf("entered %d, timed out %d, cancelled %d", entered.Load(), timedOut.Load(), cancelled.Load())
	if entered.Load() == 0 {
		t.Fatal("nobody ever got the lock")
	}
	waitUntilFree(t, path)
	waitForGoroutines(t, base)
}

// TestExclusionAcrossManyProcesses: helper processes hammer the lock and
// append a begin and an end record inside it, some of them with timeouts
// short enough to give up often. Every begin must be followed by the same
// process's end.
func TestExclusionAcrossManyProcesses(t *testing.T) {
	dir := t.TempDir()
	path, log := filepath.Join(dir, "lock"), filepath.Join(dir, "log")
	const procs, rounds = 8, 40
	type outcome struct{ ok, timeouts int }
	results := make([]outcome, procs)
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for p := 0; p < procs; p++ {
		// Every third process waits only briefly and often gives up.
		timeout := 30 * time.Second
		if p%3 == 2 {
			timeout = 100 * time.Microsecond
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("BL_LOCK_TEST_HAMMER=%s|%s|%d|%d|%s", path, log, p, rounds, timeout))
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := cmd.Output()
			if err != nil {
				errs <- fmt.Errorf("process %d: %v: %s", p, err, out)
				return
			}
			if _, err := fmt.Sscanf(string(out), "ok %d timeouts %d", &results[p].ok, &results[p].timeouts); err != nil {
				errs <- fmt.Errorf("process %d: %q: %v", p, out, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines)%2 != 0 {
		t.Fatalf("%d records, want begin/end pairs", len(lines))
	}
	entries := make([]int, procs)
	for i := 0; i < len(lines); i += 2 {
		var p, q int
		if _, err := fmt.Sscanf(lines[i], "begin %d", &p); err != nil {
			t.Fatalf("record %d: %q, want a begin", i, lines[i])
		}
		if _, err := fmt.Sscanf(lines[i+1], "end %d", &q); err != nil || q != p {
			t.Fatalf("record %d: %q after %q: two processes inside the lock", i+1, lines[i+1], lines[i])
		}
		entries[p]++
	}
	timeouts := 0
	for p, r := range results {
		if r.ok != entries[p] {
			t.Errorf("process %d reports %d entries, the log shows %d", p, r.ok, entries[p])
		}
		if r.ok+r.timeouts != rounds {
			t.Errorf("process %d: %d entries and %d timeouts, want %d rounds", p, r.ok, r.timeouts, rounds)
		}
		timeouts += r.timeouts
	}
	t.Logf("%d entries, %d timeouts", len(lines)/2, timeouts)
	waitUntilFree(t, path)
}

// hammer is a helper process of TestExclusionAcrossManyProcesses. spec is
// lock path|log path|id|rounds|timeout. It prints its entries and timeouts.
func hammer(spec string) int {
	f := strings.Split(spec, "|")
	id, _ := strconv.Atoi(f[2])
	rounds, _ := strconv.Atoi(f[3])
	timeout, err := time.ParseDuration(f[4])
	if len(f) != 5 || err != nil {
		fmt.Println("bad spec", spec)
		return 2
	}
	out, err := os.OpenFile(f[1], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	l := New(f[0])
	ok, timeouts := 0, 0
	for i := 0; i < rounds; i++ {
		err := l.Acquire(context.Background(), timeout)
		if errors.Is(err, ErrTimeout) {
			timeouts++
			continue
		}
		if err != nil {
			fmt.Println(err)
			return 1
		}
		// Two separate appends, with a pause between, so that anyone else
		// writing inside the lock at the same time would land in between.
		if _, err := fmt.Fprintf(out, "begin %d\n", id); err != nil {
			fmt.Println(err)
			return 1
		}
		time.Sleep(200 * time.Microsecond)
		if _, err := fmt.Fprintf(out, "end %d\n", id); err != nil {
			fmt.Println(err)
			return 1
		}
		if err := l.Release(); err != nil {
			fmt.Println(err)
			return 1
		}
		ok++
	}
	fmt.Printf("ok %d timeouts %d\n", ok, timeouts)
	return 0
}

// BenchmarkHandoffLatency: how long after the holder releases does a waiter
// already queued for the lock have it. Reported as ns/handoff.
func BenchmarkHandoffLatency(b *testing.B) {
	path := filepath.Join(b.TempDir(), "lock")
	holder, waiter := New(path), New(path)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		if err := holder.Acquire(context.Background(), 0); err != nil {
			b.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			if err := waiter.Acquire(context.Background(), time.Minute); err != nil {
				b.Error(err)
			}
			at := time.Now()
			waiter.Release()
			got <- at
		}()
		time.Sleep(2 * time.Millisecond) // the waiter is queued by now
		released := time.Now()
		if err := holder.Release(); err != nil {
			b.Fatal(err)
		}
		total += (<-got).Sub(released)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/handoff")
}

// BenchmarkContendedHandoff: N goroutines with their own Files take turns at
// the lock as fast as they can. ns/op is the time per lock cycle across all
// of them.
func BenchmarkContendedHandoff(b *testing.B) {
	for _, n := range []int{1, 8, 32, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "lock")
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := 0; g < n; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := New(path)
					for next.Add(1) <= int64(b.N) {
						if err := l.Acquire(context.Background(), time.Minute); err != nil {
							b.Error(err)
							return
						}
						if err := l.Release(); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
