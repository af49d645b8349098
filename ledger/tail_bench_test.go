package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTail100k measures what a bl call does in process at 100,000
// cards with a million events of history and a ledger tail of half its
// compaction threshold (about 800 events touching a few hundred cards),
// written by separate calls as bl's own are: open, and open with one
// durable heartbeat, each with a fresh handle as a process has. The tail
// checkpoint (cache/tail.ckpt) is what keeps the tail from being decoded
// and folded at every open; "open-no-checkpoint" is the same open
// without it. "open+ready10" (bl ready --limit 10) and "open+pick" (the
// card bl claim takes) decode only the checkpoint's cards they reach.
func BenchmarkTail100k(b *testing.B) {
	dir := b.TempDir()
	writeHistory(b, dir, 100_000, 1_000_000)
	ctx := context.Background()
	for i := 0; ; i++ {
		bl, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dir, LedgerFile))
		if err != nil {
			b.Fatal(err)
		}
		if fi.Size() >= bl.CompactThreshold()/2 {
			bl.Close()
			break
		}
		id := cardName(i * 433 % 100_000)
		c, err := bl.Claim(ctx, ClaimRequest{Mutation: m, ID: id, Owner: "tail", TTL: time.Hour})
		if err == nil {
			_, err = bl.Heartbeat(ctx, HeartbeatRequest{Mutation: m, ID: id, Owner: "tail", Epoch: c.ClaimEpoch})
		}
		if err == nil {
			_, err = bl.Release(ctx, LeaseRequest{Mutation: m, ID: id, Owner: "tail", Epoch: c.ClaimEpoch})
		}
		bl.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	bl, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	held, err := bl.Claim(ctx, ClaimRequest{Mutation: m, Owner: "bench", TTL: 24 * time.Hour})
	bl.Close()
	if err != nil || held == nil {
		b.Fatalf("claim: %v %v", held, err)
	}
	open := func(b *testing.B) *Backlog {
		bl, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		return bl
	}
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			open(b).Close()
		}
	})
	b.Run("open-no-checkpoint", func(b *testing.B) {
		ck := filepath.Join(dir, CacheDir, CheckpointFile)
		aside := ck + ".aside"
		if err := os.Rename(ck, aside); err != nil {
			b.Fatalf("no checkpoint was written: %v", err)
		}
		defer os.Rename(aside, ck)
		for b.Loop() {
			open(b).Close()
		}
	})
	b.Run("open+ready10", func(b *testing.B) {
		for b.Loop() {
			bl := open(b)
			if cards, err := bl.Ready(Filter{Limit: 10}); err != nil || len(cards) != 10 {
				b.Fatalf("ready: %d cards, %v", len(cards), err)
			}
			bl.Close()
		}
	})
	b.Run("open+pick", func(b *testing.B) {
		for b.Loop() {
			bl := open(b)
			if err := bl.View(func(s *State, now time.Time) error {
				if s.Pick(Filter{Claimer: "bench"}, now) == nil {
					return errors.New("nothing to pick")
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			bl.Close()
		}
	})
	b.Run("open+heartbeat", func(b *testing.B) {
		for b.Loop() {
			bl := open(b)
			if _, err := bl.Heartbeat(ctx, HeartbeatRequest{Mutation: m, ID: held.ID, Owner: "bench", Epoch: held.ClaimEpoch}); err != nil {
				b.Fatal(err)
			}
			bl.Close()
		}
	})
}

func cardName(i int) string {
	const digits = "0123456789"
	id := []byte("C000000")
	for k := len(id) - 1; k > 0; k-- {
		id[k] = digits[i%10]
		i /= 10
	}
	return string(id)
}
