package ledger

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
)

// cloneOf starts a second backlog directory holding a copy of e's ledger,
// with its own clock at the same time.
func cloneOf(t *testing.T, e *env) *env {
	t.Helper()
	c := newEnv(t)
	c.writeLedger(e.bytes())
	c.clk.Set(e.clk.Now())
	c.b = c.open()
	return c
}

type rawEvent struct {
	line []byte
	ev   *Event
}

// unionLines merges ledgers the way a sync does: every distinct event once,
// in (at, id) order.
func unionLines(t *testing.T, ledgers ...[]byte) []rawEvent {
	t.Helper()
	seen := map[string]bool{}
	var out []rawEvent
	for _, data := range ledgers {
		for _, l := range splitLines(data) {
			ev, err := DecodeLine(l)
			if err != nil {
				t.Fatal(err)
			}
			if seen[ev.ID] {
				continue
			}
			seen[ev.ID] = true
			out = append(out, rawEvent{line: l, ev: ev})
		}
	}
	slices.SortFunc(out, func(a, b rawEvent) int {
		if c := a.ev.At.Compare(b.ev.At); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.ev.ID), []byte(b.ev.ID))
	})
	return out
}

func eventsOf(raw []rawEvent) []*Event {
	evs := make([]*Event, len(raw))
	for i, r := range raw {
		// Fold gets its own copies, so the two folds share nothing.
		ev, _ := DecodeLine(r.line)
		evs[i] = ev
	}
	return evs
}

// TestMergeDeterminism: two clones of one backlog both claim card A (and do
// other work) without seeing each other. Whatever order the clones learn
// each other's events in, the union folds to one state with exactly one
// claim winner and the loser's lease events recorded as conflicts.
func TestMergeDeterminism(t *testing.T) {
	cases := []struct {
		name           string
		aliceAt, bobAt time.Duration // after the common prefix
	}{
		{"alice first", 10 * time.Second, 15 * time.Second},
		{"bob first", 15 * time.Second, 10 * time.Second},
		{"same instant", 10 * time.Second, 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := newEnv(t)
			base.create("A")
			base.create("B")
			base.create("C")

			ca, cb := cloneOf(t, base), cloneOf(t, base)
			ca.clk.Set(t0.Add(tc.aliceAt))
			alice := ca.claim("A", "alice", time.Minute)
			ca.clk.Advance(5 * time.Second)
			if _, err := ca.b.Heartbeat(ca.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "alice", Epoch: 1, Progress: intp(30)}); err != nil {
				t.Fatal(err)
			}
			ca.create("from-a")

			cb.clk.Set(t0.Add(tc.bobAt))
			bob := cb.claim("A", "bob", time.Minute)
			cb.clk.Advance(time.Second)
			if _, err := cb.b.Heartbeat(cb.ctx, HeartbeatRequest{Mutation: m, ID: "A", Owner: "bob", Epoch: 1, Progress: intp(60)}); err != nil {
				t.Fatal(err)
			}
			cb.claim("B", "bob", time.Minute)
			if _, err := cb.b.Complete(cb.ctx, LeaseRequest{Mutation: m, ID: "B", Owner: "bob", Epoch: 1}); err != nil {
				t.Fatal(err)
			}
			if alice.ClaimEpoch != 1 || bob.ClaimEpoch != 1 {
				t.Fatal("both clones should have claimed epoch 1")
			}

			la, lb := ca.bytes(), cb.bytes()
			ab := unionLines(t, la, lb)
			ba := unionLines(t, lb, la)
			for i := range ab {
				if !bytes.Equal(ab[i].line, ba[i].line) {
					t.Fatalf("union differs by learning order at %d", i)
				}
			}
			s1, s2 := fold.Fold(eventsOf(ab)), fold.Fold(eventsOf(ba))
			j1, j2 := stateJSON(t, s1), stateJSON(t, s2)
			if j1 != j2 {
				t.Fatalf("folds differ:\n%s\n%s", j1, j2)
			}

			// The earlier claim in (at, id) order wins.
			claims := map[string]*Event{}
			for _, r := range ab {
				if r.ev.Op == OpClaim && r.ev.Card == "A" {
					claims[r.ev.Owner] = r.ev
				}
			}
			winner, loser := "alice", "bob"
			if claims["bob"].Before(claims["alice"]) {
				winner, loser = "bob", "alice"
			}
			a, _ := s1.Card("A")
			if a.Status != StatusClaimed || a.ClaimOwner != winner || a.ClaimEpoch != 1 || a.Attempts != 1 {
				t.Fatalf("A after merge = %+v, want claimed by %s at epoch 1", a, winner)
			}
			wantProgress := map[string]int{"alice": 30, "bob": 60}[winner]
			if a.Progress == nil || *a.Progress != wantProgress {
				t.Fatalf("A progress = %v, want the winner's %d", a.Progress, wantProgress)
			}
			conflicts := s1.Conflicts()
			var lost []Op
			for _, c := range conflicts {
				if c.Card != "A" {
					t.Fatalf("unexpected conflict %+v", c)
				}
				lost = append(lost, c.Op)
			}
			if len(lost) != 2 || lost[0] != OpClaim || lost[1] != OpHeartbeat {
				t.Fatalf("conflicts = %+v, want %s's claim and heartbeat", conflicts, loser)
			}
			if conflicts[0].Event != claims[loser].ID {
				t.Fatalf("conflict names event %s, want %s's claim %s", conflicts[0].Event, loser, claims[loser].ID)
			}
			// Work that did not collide survives from both sides.
			if b, _ := s1.Card("B"); b.Status != StatusDone {
				t.Fatalf("B = %s", b.Status)
			}
			if _, ok := s1.Card("from-a"); !ok {
				t.Fatal("card created on clone A lost")
			}

			// The merged file reads back to the same state.
			merged := newEnv(t)
			var data []byte
			for _, r := range ab {
				data = append(data, r.line...)
			}
			merged.writeLedger(data)
			mb := merged.open()
			var j3 string
			if err := mb.view(func(s *fold.State, _ time.Time) error { j3 = stateJSON(t, s); return nil }); err != nil {
				t.Fatal(err)
			}
			if j3 != j1 {
				t.Fatalf("merged file folds differently:\n%s\n%s", j3, j1)
			}
			// The next claim of A after the lease runs out is epoch 2.
			merged.b = mb
			merged.clk.Set(t0.Add(time.Hour))
			if c := merged.claim("A", "carol", time.Minute); c.ClaimEpoch != 2 {
				t.Fatalf("claim after merge = epoch %d", c.ClaimEpoch)
			}
		})
	}
}

// TestWriterStateIsTheFoldOfTheFile: what a write reports is what any reader
// folds from the file, even for input JSON cannot carry as given. (Invalid
// UTF-8 is refused before it gets there: TestInvalidUTF8Refused.)
func TestWriterStateIsTheFoldOfTheFile(t *testing.T) {
	e := newEnv(t)
	e.create("A", func(r *CreateRequest) { r.Labels = []string{"keep"}; r.Body = "ok" })
	var nilList []string
	got, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Labels: &nilList, Body: strp("tab\tand \u2028 separator"), Title: strp("t\x00itle")}})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := e.open().Get("A")
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, got) != mustJSON(t, fresh) {
		t.Fatalf("writer reported\n%s\nbut the ledger folds to\n%s", mustJSON(t, got), mustJSON(t, fresh))
	}
	if fs := foldFile(t, e.ledgerPath()); stateJSON(t, fs) != stateJSON(t, e.b.held()) {
		t.Fatal("writer state differs from the fold of the file")
	}
}
