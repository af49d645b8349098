package watch

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/bl-backlog/bl/ledger"
)

// TestFollowWithoutInotify: when the kernel has no inotify instance left
// (EMFILE, fs.inotify.max_user_instances), Follow polls and still delivers
// every event.
func TestFollowWithoutInotify(t *testing.T) {
	newWatcher = func() (*fsnotify.Watcher, error) { return nil, fmt.Errorf("inotify_init1: %w", syscall.EMFILE) }
	defer func() { newWatcher = fsnotify.NewWatcher }()
	dir, b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, errs := stream(ctx, dir, ledger.Cursor{})
	time.Sleep(50 * time.Millisecond)
	create(t, b, "P1")
	if got := collect(t, events, 1); got[0].Card != "P1" {
		t.Fatalf("got %s", got[0].Card)
	}
	create(t, b, "P2")
	if got := collect(t, events, 1); got[0].Card != "P2" {
		t.Fatalf("got %s", got[0].Card)
	}
	select {
	case err := <-errs:
		t.Fatalf("follow ended: %v", err)
	default:
	}
}

// TestOtherWatcherErrorsStillFail: an error that is not the kernel running
// out of watches is reported, not papered over by polling.
func TestOtherWatcherErrorsStillFail(t *testing.T) {
	newWatcher = func() (*fsnotify.Watcher, error) { return nil, syscall.EPERM }
	defer func() { newWatcher = fsnotify.NewWatcher }()
	dir, _ := setup(t)
	if _, err := NewNotifier(dir); err == nil {
		t.Fatal("NewNotifier with a broken watcher succeeded")
	}
}
