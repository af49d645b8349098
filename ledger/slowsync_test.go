package ledger

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

// An append's fsync is timed: Options.Synced gets every duration, and
// one past Options.SlowSync is a warning naming the time and the
// threshold. The slow disk is a seam (the handle's fsync), not a real one.
func TestSlowFsyncWarns(t *testing.T) {
	e := newEnv(t)
	var warnings []string
	var synced []time.Duration
	open := func(limit time.Duration) *Backlog {
		b, err := Open(e.dir, Options{Clock: e.clk.Now, SlowSync: limit,
			Warn:   func(msg string) { warnings = append(warnings, msg) },
			Synced: func(d time.Duration) { synced = append(synced, d) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		b.st.SetFsync(func(f *os.File) error { time.Sleep(20 * time.Millisecond); return store.Fdatasync(f) })
		return b
	}

	b := open(time.Millisecond)
	for _, id := range []string{"S1", "S2"} {
		if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: id, Title: "slow"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(synced) != 2 || synced[0] < 20*time.Millisecond {
		t.Fatalf("synced %v, want two fsyncs of 20ms or more", synced)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "fsync of ledger.jsonl took ") || !strings.Contains(warnings[0], "(over 1ms, BL_SLOW_FSYNC)") {
		t.Fatalf("warnings %q, want one per slow fsync naming the time and the threshold", warnings)
	}

	// Under the threshold, or with warnings off: timed, not reported.
	for _, limit := range []time.Duration{time.Hour, -1} {
		warnings, synced = nil, nil
		b := open(limit)
		if _, _, err := b.Create(e.ctx, CreateRequest{Mutation: m, ID: "F" + limit.String(), Title: "fast enough"}); err != nil {
			t.Fatal(err)
		}
		if len(warnings) != 0 || len(synced) != 1 {
			t.Fatalf("threshold %s: warnings %q, synced %v", limit, warnings, synced)
		}
	}
}
