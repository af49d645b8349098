package gitsync

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// warnings records what a backlog handle warns of.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(m string) { w.mu.Lock(); w.msgs = append(w.msgs, m); w.mu.Unlock() }

func (w *warnings) all() string { w.mu.Lock(); defer w.mu.Unlock(); return strings.Join(w.msgs, "\n") }

func openWarned(t *testing.T, dir string) (*ledger.Backlog, *warnings) {
	t.Helper()
	ws := &warnings{}
	b, err := ledger.Open(filepath.Join(dir, ".backlog"), ledger.Options{LockTimeout: time.Minute, Warn: ws.add})
	if err != nil {
		t.Fatal(err)
	}
	return b, ws
}

// craftLeaseCommit makes, with the system git in dir, a lease ref commit
// whose message holds lines, and pushes it to ref on the remote; it
// returns the commit's hash.
func (w *world) craftLeaseCommit(dir, ref, card string, lines []string, force bool) string {
	w.t.Helper()
	msg := leaseSubject + card + "\n\n" + strings.Join(lines, "")
	f := filepath.Join(w.root, "leasemsg")
	if err := os.WriteFile(f, []byte(msg), 0o644); err != nil {
		w.t.Fatal(err)
	}
	h := strings.TrimSpace(w.git(dir, "commit-tree", emptyTree.String(), "-F", f))
	spec := h + ":" + ref
	if force {
		spec = "+" + spec
	}
	w.git(dir, "push", "-q", "origin", spec)
	return h
}

// ledgerLines is the lines of a backlog's ledger.jsonl for the events of
// op on card.
func ledgerLines(t *testing.T, b *ledger.Backlog, op ledger.Op, card string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.Dir(), ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if e, err := ledger.DecodeLine([]byte(l)); err == nil && e.Op == op && e.Card == card {
			out = append(out, l)
		}
	}
	return out
}

// A teammate who may push refs/bl/* but not the branch pushes, with the
// system git, a lease commit for C1 whose message holds a delete of C2,
// an update of C3 and a completion of C4 (good lines, made by a real bl).
// The victim's remote claim folds none of them, warns naming the ref and
// the commit, and its carry puts none of them on the branch.
func TestLeaseRefCarriesOnlyItsCardsLeaseEvents(t *testing.T) {
	w := newWorld(t)
	dv, dm := w.clone("victim"), w.clone("mallory")
	v, ws := openWarned(t, dv)
	create(t, v, "seed", "C1", "C2", "C3", "C4")
	sv := syncer(t, v, Options{Remote: "origin", Actor: "victim"})
	push(t, sv)
	m := open(t, dm)
	if _, err := syncer(t, m, Options{Remote: "origin", Actor: "mallory"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	mal := ledger.Mutation{Actor: "mallory"}
	if _, err := m.Delete(bg, ledger.DeleteRequest{Mutation: mal, ID: "C2"}); err != nil {
		t.Fatal(err)
	}
	title := "owned"
	if _, err := m.Update(bg, ledger.UpdateRequest{Mutation: mal, ID: "C3", Fields: ledger.Fields{Title: &title}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(bg, ledger.LeaseRequest{Mutation: mal, ID: "C4"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(bg, ledger.UpdateRequest{Mutation: mal, ID: "C1", Fields: ledger.Fields{Title: &title}}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	lines = append(lines, ledgerLines(t, m, ledger.OpDelete, "C2")...)
	lines = append(lines, ledgerLines(t, m, ledger.OpUpdate, "C3")...)
	lines = append(lines, ledgerLines(t, m, ledger.OpComplete, "C4")...)
	lines = append(lines, ledgerLines(t, m, ledger.OpUpdate, "C1")...)
	if len(lines) != 4 {
		t.Fatalf("mallory's lines: %q", lines)
	}
	ref := sv.leasePrefix + "C1"
	bad := w.craftLeaseCommit(dm, ref, "C1", lines, false)

	card, _, err := sv.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "victim"}, Owner: "victim", ID: "C1", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatalf("the victim's claim: %v %v", card, err)
	}
	push(t, sv)
	want := "C1 claimed victim#1 v2\nC2 ready #0 v1\nC3 ready #0 v1\nC4 ready #0 v1\n"
	if got := cards(t, v); got != want {
		t.Fatalf("the victim folds:\n%s", got)
	}
	if got := cards(t, w.freshClone("plain")); got != want {
		t.Fatalf("the branch holds:\n%s", got)
	}
	msgs := ws.all()
	if strings.Count(msgs, bad) != 1 || !strings.Contains(msgs, ref) || !strings.Contains(msgs, "of card C2") || !strings.Contains(msgs, "and 1 more") {
		t.Fatalf("warnings:\n%s", msgs)
	}
	// Reported once: the next call reads the same tip from the cache.
	if _, err := syncer(t, v, Options{Remote: "origin", Actor: "victim"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	if strings.Count(ws.all(), bad) != 1 {
		t.Fatalf("warned again:\n%s", ws.all())
	}
}

// One card's lease ref that does not read (a damaged line, a commit far
// over the size cap) sets that card's lease lines aside with a warning;
// every other card's remote calls go on.
func TestDamagedLeaseRefAffectsOneCard(t *testing.T) {
	w := newWorld(t)
	dv, dm := w.clone("victim"), w.clone("mallory")
	v, ws := openWarned(t, dv)
	create(t, v, "seed", "C1", "C2", "C3")
	sv := syncer(t, v, Options{Remote: "origin", Actor: "victim"})
	push(t, sv)
	damaged := w.craftLeaseCommit(dm, sv.leasePrefix+"C1", "C1", []string{`{"v":3,"id":"x","op":"claim","card":"C1"}` + "\n"}, false)
	big := strings.Repeat(`{"v":3,"id":"`+strings.Repeat("y", 200)+`"}`+"\n", 2000)
	huge := w.craftLeaseCommit(dm, sv.leasePrefix+"C2", "C2", []string{big}, false)
	for _, id := range []string{"C3", "C1"} {
		card, _, err := sv.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "victim"}, Owner: "victim", ID: id, TTL: time.Hour})
		if err != nil || card == nil {
			t.Fatalf("claim %s: %v %v", id, card, err)
		}
	}
	msgs := ws.all()
	if !strings.Contains(msgs, damaged) || !strings.Contains(msgs, "does not read") || !strings.Contains(msgs, huge) || !strings.Contains(msgs, "refused unread") {
		t.Fatalf("warnings:\n%s", msgs)
	}
	// The card whose tip was refused unread is claimed over it, and its
	// new tip does not keep the oversized commit as history.
	card, _, err := sv.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "victim"}, Owner: "victim", ID: "C2", TTL: time.Hour})
	if err != nil || card == nil {
		t.Fatalf("claim C2: %v %v", card, err)
	}
	if n := strings.Count(w.git(w.bare, "rev-list", sv.leasePrefix+"C2"), "\n"); n != 1 {
		t.Fatalf("C2's lease ref has %d commits in its history, want 1", n)
	}
}

// A teammate pushes to C1's lease ref, over the tip holding the victim's
// claim (epoch 1), a heartbeat and a completion by mallory at epoch 7
// (good lines, made by a real bl). The victim's next remote heartbeat
// folds neither, warns once naming the ref and the commit, records no
// conflict, and neither its new tip nor the branch carries them.
func TestLeaseRefRefusesEventsTheFoldFences(t *testing.T) {
	w := newWorld(t)
	dv, dm := w.clone("victim"), w.clone("mallory")
	v, ws := openWarned(t, dv)
	create(t, v, "seed", "C1", "C2")
	sv := syncer(t, v, Options{Remote: "origin", Actor: "victim"})
	push(t, sv)
	card, _, err := sv.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "victim"}, Owner: "victim", ID: "C1", TTL: time.Hour})
	if err != nil || card == nil || card.ClaimEpoch != 1 {
		t.Fatalf("the victim's claim: %v %v", card, err)
	}
	claim := ledgerLines(t, v, ledger.OpClaim, "C1")

	m := open(t, dm)
	if _, err := syncer(t, m, Options{Remote: "origin", Actor: "mallory"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	mal := ledger.Mutation{Actor: "mallory"}
	for range 7 {
		c, err := m.Claim(bg, ledger.ClaimRequest{Mutation: mal, Owner: "mallory", ID: "C2", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if c.ClaimEpoch < 7 {
			if _, err := m.Release(bg, ledger.LeaseRequest{Mutation: mal, ID: "C2", Owner: "mallory", Epoch: c.ClaimEpoch}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := m.Heartbeat(bg, ledger.HeartbeatRequest{Mutation: mal, ID: "C2", Owner: "mallory", Epoch: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(bg, ledger.LeaseRequest{Mutation: mal, ID: "C2", Owner: "mallory", Epoch: 7}); err != nil {
		t.Fatal(err)
	}
	// The same events, retold of C1 (ids and checksums made again).
	var forged []string
	for _, op := range []ledger.Op{ledger.OpHeartbeat, ledger.OpComplete} {
		for _, l := range ledgerLines(t, m, op, "C2") {
			e, err := ledger.DecodeLine([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			e.Card, e.ID = "C1", e.ID+"x"
			line, err := ledger.EncodeLine(e)
			if err != nil {
				t.Fatal(err)
			}
			forged = append(forged, string(line))
		}
	}
	if len(claim) != 1 || len(forged) != 2 {
		t.Fatalf("lines: %q %q", claim, forged)
	}
	ref := sv.leasePrefix + "C1"
	bad := w.craftLeaseCommit(dm, ref, "C1", append(claim, forged...), true)
	// Reported once: a second call (a new handle: the judgement is cached)
	// neither warns again nor folds the lines.
	for range 2 {
		if _, err := syncer(t, v, Options{Remote: "origin", Actor: "victim"}).Pull(bg); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(ws.all(), bad); n != 1 {
		t.Fatalf("warned %d times:\n%s", n, ws.all())
	}

	if _, _, err := sv.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return v.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: ledger.Mutation{Actor: "victim", RequestID: rid}, ID: "C1", Owner: "victim", Epoch: 1})
	}); err != nil {
		t.Fatalf("the victim's heartbeat: %v", err)
	}
	push(t, sv)
	want := "C1 claimed victim#1 v3\nC2 ready #0 v1\n"
	if got := cards(t, v); got != want {
		t.Fatalf("the victim folds:\n%s", got)
	}
	var conflicts []ledger.Conflict
	_ = v.View(func(s *ledger.State, _ time.Time) error { conflicts = s.Conflicts(); return nil })
	if len(conflicts) != 0 {
		t.Fatalf("the victim records conflicts: %+v", conflicts)
	}
	fresh := w.freshClone("plain")
	if got := cards(t, fresh); got != want {
		t.Fatalf("the branch holds:\n%s", got)
	}
	for _, op := range []ledger.Op{ledger.OpHeartbeat, ledger.OpComplete} {
		for _, l := range ledgerLines(t, fresh, op, "C1") {
			if strings.Contains(l, `"mallory"`) {
				t.Fatalf("the branch carries %s", l)
			}
		}
	}
	if tip := w.git(w.bare, "log", "-1", "--format=%B", ref); strings.Contains(tip, "mallory") {
		t.Fatalf("the victim's tip carries mallory's lines:\n%s", tip)
	}
	msgs := ws.all()
	if strings.Count(msgs, bad) != 1 || !strings.Contains(msgs, ref) || !strings.Contains(msgs, "line 2: a heartbeat by mallory at epoch 7") || !strings.Contains(msgs, "and 1 more") && !strings.Contains(msgs, "line 3: a complete by mallory") {
		t.Fatalf("warnings:\n%s", msgs)
	}
}

// foldLeases refuses only what names an owner or epoch the fold does not
// accept: a claim then its heartbeat and completion pass, and so do lease
// events that a branch edit (a block by hand) makes recorded conflicts.
func TestFoldLeasesRefusesOnlyOwnerAndEpoch(t *testing.T) {
	w := newWorld(t)
	b := open(t, w.clone("a"))
	create(t, b, "seed", "C1")
	m := ledger.Mutation{Actor: "alice"}
	if _, err := b.Claim(bg, ledger.ClaimRequest{Mutation: m, Owner: "alice", ID: "C1", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Heartbeat(bg, ledger.HeartbeatRequest{Mutation: m, ID: "C1", Owner: "alice", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Complete(bg, ledger.LeaseRequest{Mutation: m, ID: "C1", Owner: "alice", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	one := func(op ledger.Op) []byte {
		l := ledgerLines(t, b, op, "C1")
		if len(l) != 1 {
			t.Fatalf("%s lines: %q", op, l)
		}
		return []byte(l[0])
	}
	retold := func(l []byte, edit func(e *ledger.Event)) []byte {
		e, err := ledger.DecodeLine(l)
		if err != nil {
			t.Fatal(err)
		}
		e.ID += "x"
		edit(e)
		out, err := ledger.EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	create1, claim, hb, done := one(ledger.OpCreate), one(ledger.OpClaim), one(ledger.OpHeartbeat), one(ledger.OpComplete)
	// A block by hand (no owner) stamped between the claim and the heartbeat.
	block := retold(claim, func(e *ledger.Event) {
		e.Op, e.Owner, e.Epoch, e.TTLSeconds, e.ExpectVersion, e.Reason = ledger.OpBlock, "", 0, 0, 0, "by hand"
		e.At = e.At.Add(time.Nanosecond)
	})
	forged := retold(hb, func(e *ledger.Event) { e.Owner, e.Epoch = "mallory", 7 })
	skip := retold(claim, func(e *ledger.Event) { e.Epoch = 5 })
	for _, tc := range []struct {
		name   string
		branch [][]byte
		lease  [][]byte
		want   int
	}{
		{"claim, heartbeat, complete", [][]byte{create1}, [][]byte{claim, hb, done}, 0},
		{"claim on the branch, its heartbeat and complete", [][]byte{create1, claim}, [][]byte{hb, done}, 0},
		{"racing a block by hand", [][]byte{create1, block}, [][]byte{claim, hb}, 0},
		{"a heartbeat by another owner and epoch", [][]byte{create1, claim}, [][]byte{forged, hb}, 1},
		{"a claim that skips epochs", [][]byte{create1}, [][]byte{skip}, 1},
	} {
		st, err := ledger.Tree{ledger.LedgerFile: bytes.Join(tc.branch, nil)}.Fold()
		if err != nil {
			t.Fatal(err)
		}
		refused, err := foldLeases(st, bytes.Join(tc.branch, nil), tc.lease)
		if err != nil || len(refused) != tc.want {
			t.Errorf("%s: refused %v (%v), want %d", tc.name, refused, err, tc.want)
		}
	}
}
