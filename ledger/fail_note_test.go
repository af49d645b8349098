package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		initial, max int64
		attempts     int
		want         time.Duration
	}{
		{30, 3600, 0, 30 * time.Second},
		{30, 3600, 1, 30 * time.Second},
		{30, 3600, 2, time.Minute},
		{30, 3600, 3, 2 * time.Minute},
		{30, 3600, 8, time.Hour}, // 30s·2^7 = 64m, capped
		{30, 3600, 1 << 30, time.Hour},
		{0, 3600, 5, 0},
		{30, 0, 200, 100 * 365 * 24 * time.Hour}, // no cap: a century at most, no overflow
		{7200, 60, 1, time.Minute},
	} {
		if got := fold.RetryDelay(tc.initial, tc.max, tc.attempts); got != tc.want {
			t.Errorf("retryDelay(%d, %d, %d) = %s, want %s", tc.initial, tc.max, tc.attempts, got, tc.want)
		}
	}
}

func TestFailBacksOffThenBlocks(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.MaxAttempts = 3 })
	fail := func(owner string, epoch int64, reason string) Card {
		t.Helper()
		c, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: owner, Epoch: epoch, Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e.claim("A", "w1", time.Minute)
	at := e.clk.Now()
	c := fail("w1", 1, "exit status 1")
	if c.Status != StatusReady || c.ClaimOwner != "" || c.Attempts != 1 || c.DeferUntil == nil {
		t.Fatalf("after the first fail: %+v", c)
	}
	if d := c.DeferUntil.Sub(at); d < 30*time.Second || d > 31*time.Second {
		t.Fatalf("first backoff = %s, want the default 30s", d)
	}
	if ev := e.lastEvent(); ev.Op != OpFail || ev.BackoffSeconds != 30 || ev.BackoffMaxSeconds != 3600 || ev.Reason != "exit status 1" {
		t.Fatalf("fail event = %+v", ev)
	}
	// Not claimable while backing off.
	e.unchanged(ErrConflict, doClaim("A", "w2", time.Minute))
	e.clk.Advance(31 * time.Second)
	e.claim("A", "w2", time.Minute)
	at = e.clk.Now()
	c = fail("w2", 2, "exit status 2")
	if d := c.DeferUntil.Sub(at); c.Attempts != 2 || d < time.Minute || d > time.Minute+time.Second {
		t.Fatalf("second fail: attempts %d, backoff %s, want 2 and 1m", c.Attempts, d)
	}
	e.clk.Advance(2 * time.Minute)
	e.claim("A", "w3", time.Minute)
	c = fail("w3", 3, "exit status 3: out of disk")
	if c.Status != StatusBlocked || c.BlockedReason != "max attempts reached (3 of 3): exit status 3: out of disk" {
		t.Fatalf("exhausted card after fail = %+v", c)
	}
	// Every clone folds the same: the file's fold equals the handle's state.
	if got, want := stateJSON(t, foldFile(t, e.ledgerPath())), stateJSONOf(t, e); got != want {
		t.Fatalf("fold of the file differs from the writer's state:\n%s\n%s", got, want)
	}
}

func stateJSONOf(t *testing.T, e *env) string {
	var out string
	if err := e.b.view(func(s *fold.State, _ time.Time) error { out = stateJSON(t, s); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFailIsFenced(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.claim("A", "w1", time.Minute)
	e.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w2", Reason: "x"})
		return err
	})
	e.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 7, Reason: "x"})
		return err
	})
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Reason: "x"})
		return err
	})
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Reason: strings.Repeat("x", wire.MaxNoteLen+1)})
		return err
	})
}

func TestFailBackoffFromConfig(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"retry_backoff":{"initial":"5s","max":"8s"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
	e.create("A")
	for i, want := range []int64{5, 8, 8} {
		e.claim("A", "w", time.Minute)
		at := e.clk.Now()
		c, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w", Reason: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if d := c.DeferUntil.Sub(at); d < time.Duration(want)*time.Second || d > time.Duration(want+1)*time.Second {
			t.Fatalf("fail %d: backoff %s, want %ds", i+1, d, want)
		}
		e.clk.Advance(10 * time.Second)
	}

	if err := os.WriteFile(filepath.Join(e.dir, ConfigFile), []byte(`{"version":1,"retry_backoff":{"initial":"soon"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b = e.open()
	e.claim("A", "w", time.Minute)
	err := e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w"})
		return err
	})
	if !strings.Contains(err.Error(), "retry_backoff.initial") {
		t.Fatalf("error does not name the setting: %v", err)
	}
}

// An expired lease counts like a fail: reclaiming it backs the card off,
// and when its attempts are used up it is blocked.
func TestExpiryCountsAsFailedAttempt(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.MaxAttempts = 2 })
	e.claim("A", "w1", 10*time.Second)
	e.clk.Advance(11 * time.Second)
	at := e.clk.Now()
	cards, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m})
	if err != nil || len(cards) != 1 {
		t.Fatalf("reclaim = %v, %v", cards, err)
	}
	c := cards[0]
	if c.Status != StatusReady || c.DeferUntil == nil || c.DeferUntil.Sub(at) < 30*time.Second {
		t.Fatalf("reclaimed expired card is not backed off: %+v", c)
	}
	// A forced reclaim of a live lease is an administrative release: no
	// backoff.
	e.create("B")
	e.claim("B", "w1", time.Hour)
	cards, err = e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m, ID: "B"})
	if err != nil || cards[0].DeferUntil != nil {
		t.Fatalf("forced reclaim of a live lease = %+v, %v", cards, err)
	}
	// Taking over an expired lease directly needs no reclaim and waits
	// only for the TTL; the attempt is counted by the claim.
	e.clk.Advance(31 * time.Second)
	e.claim("A", "w2", 10*time.Second)
	e.clk.Advance(11 * time.Second)
	if got := e.card("A"); got.Attempts != 2 {
		t.Fatalf("attempts after two claims = %d", got.Attempts)
	}
	e.unchanged(ErrConflict, doClaim("A", "w3", time.Minute)) // exhausted
	cards, err = e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: m})
	if err != nil || cards[0].Status != StatusBlocked || !strings.HasPrefix(cards[0].BlockedReason, "max attempts reached (2 of 2)") {
		t.Fatalf("reclaim of an exhausted expired card = %+v, %v", cards, err)
	}
}

func TestNotes(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	c, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "A", Text: "tried the cache; see #12"})
	if err != nil || len(c.Notes) != 1 || c.Notes[0].Author != "tester" || c.Notes[0].Text != "tried the cache; see #12" || c.Notes[0].At.IsZero() {
		t.Fatalf("note = %+v, %v", c.Notes, err)
	}
	// Fenced only when an owner is given.
	e.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "A", Owner: "w1", Text: "x"})
		return err
	})
	e.claim("A", "w1", time.Minute)
	if c, err = e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 1, Text: "half way"}); err != nil || c.Notes[1].Author != "w1" {
		t.Fatalf("owner's note = %+v, %v", c.Notes, err)
	}
	if c.Status != StatusClaimed || c.ClaimOwner != "w1" {
		t.Fatalf("a note changed the lease: %+v", c)
	}
	e.unchanged(ErrFenced, func(e *env) error {
		_, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: 2, Text: "x"})
		return err
	})
	for _, text := range []string{"", "  \n", strings.Repeat("x", wire.MaxNoteLen+1)} {
		e.unchanged(ErrInvalid, func(e *env) error {
			_, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "A", Text: text})
			return err
		})
	}
	e.unchanged(ErrNotFound, func(e *env) error {
		_, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "nope", Text: "x"})
		return err
	})
	e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Note(e.ctx, NoteRequest{Mutation: Mutation{Actor: strings.Repeat("a", wire.MaxAuthorLen+1)}, ID: "A", Text: "x"})
		return err
	})
	// Notes survive compaction and reopening.
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.open(); true {
		c, err := got.Get("A")
		if err != nil || len(c.Notes) != 2 || c.Notes[1].Text != "half way" {
			t.Fatalf("after compaction: %+v, %v", c.Notes, err)
		}
	}
}

// A card keeps its last MaxNotes notes, so its line stays bounded however
// many notes it gets.
func TestNotesBounded(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	big := strings.Repeat("n", wire.MaxNoteLen)
	for i := range wire.MaxNotes + 5 {
		if _, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "A", Text: big[:wire.MaxNoteLen-4] + string(rune('a'+i%26)) + "..."}); err != nil {
			t.Fatal(err)
		}
	}
	c := e.card("A")
	if len(c.Notes) != wire.MaxNotes || c.Notes[0].Text[wire.MaxNoteLen-4] != byte('a'+5) {
		t.Fatalf("kept %d notes, first ends %q", len(c.Notes), c.Notes[0].Text[wire.MaxNoteLen-4:])
	}
	line, err := wire.EncodeFramed(wire.SnapshotLine{Card: &c})
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > 200<<10 {
		t.Fatalf("a card with the most notes encodes to %d bytes", len(line))
	}
}

func TestNoteAndFailUnknownToOldFold(t *testing.T) {
	// The ops are in the closed set: a line carrying them decodes.
	for _, op := range []Op{OpNote, OpFail} {
		line, err := EncodeLine(&Event{V: 1, ID: "e", At: t0, Actor: "a", Op: op, Card: "A", Text: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeLine(line); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	var r *wire.RuleError
	if err := fold.NewState().Check(&Event{Op: OpFail, Card: "A"}); !errors.As(err, &r) {
		t.Fatalf("fail of a missing card: %v", err)
	}
}
