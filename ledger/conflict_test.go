package ledger

import (
	"bytes"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// TestConflictNamesTheLoser: a claim that lost a race merged in from
// another clone is recorded with the owner who lost, the owner who held the
// card, and the event's own stamp and clock reading, not the actor alone.
func TestConflictNamesTheLoser(t *testing.T) {
	clock := t0.Add(-5 * time.Second) // the loser's clock, behind its stamp
	evs := []*Event{
		{V: 1, ID: "0000000000000001", At: t0, Actor: "alice", Op: OpCreate, Card: "A", Fields: &Fields{Title: strp("a")}},
		{V: 1, ID: "0000000000000002", At: t0.Add(1), Actor: "host1", Op: OpClaim, Card: "A", Owner: "w1", Epoch: 1, ExpectVersion: 1, TTLSeconds: 600},
		{V: 1, ID: "0000000000000003", At: t0.Add(2), Clock: &clock, Actor: "host2", Op: OpClaim, Card: "A", Owner: "w2", Epoch: 1, ExpectVersion: 1, TTLSeconds: 600},
		// A heartbeat by the loser, fenced.
		{V: 1, ID: "0000000000000004", At: t0.Add(3), Actor: "host2", Op: OpHeartbeat, Card: "A", Owner: "w2", Epoch: 1, TTLSeconds: 600},
		// Not a lease op: no owner, and no winner to name.
		{V: 1, ID: "0000000000000005", At: t0.Add(4), Actor: "carol", Op: wire.OpReopen, Card: "A"},
	}
	s := fold.Fold(evs)
	cs := s.Conflicts()
	if len(cs) != 3 {
		t.Fatalf("conflicts %+v", cs)
	}
	want := []Conflict{
		{Event: "0000000000000003", At: t0.Add(2).Format(time.RFC3339Nano), Clock: clock.Format(time.RFC3339Nano), Op: OpClaim, Card: "A", Actor: "host2", Owner: "w2", Winner: "w1"},
		{Event: "0000000000000004", At: t0.Add(3).Format(time.RFC3339Nano), Op: OpHeartbeat, Card: "A", Actor: "host2", Owner: "w2", Winner: "w1"},
		{Event: "0000000000000005", At: t0.Add(4).Format(time.RFC3339Nano), Op: wire.OpReopen, Card: "A", Actor: "carol"},
	}
	for i := range want {
		got := cs[i]
		got.Reason = ""
		if got != want[i] {
			t.Errorf("conflict %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}

	// The snapshot keeps the new members, takes the fast path for them,
	// and gives the same bytes twice.
	a, _, err := store.EncodeSnapshot(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := store.EncodeSnapshot(fold.Fold(evs), nil, nil)
	if !bytes.Equal(a, b) {
		t.Fatal("the same events gave two snapshots")
	}
	back, _, err := store.DecodeSnapshot(SnapshotFile, bytes.NewReader(a), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Conflicts(); len(got) != 3 || got[0] != cs[0] || got[2] != cs[2] {
		t.Fatalf("read back %+v\nwant %+v", got, cs)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(a), []byte{'\n'})[1:] {
		if bytes.HasPrefix(line, []byte(`{"conflict"`)) && !checkSnapshotLine(t, line) {
			t.Fatalf("the fast path declined %s", line)
		}
	}
}
