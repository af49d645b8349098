package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

var bg = context.Background()

func TestCommitIsQuietWhenNothingChanged(t *testing.T) {
	w := newWorld(t)
	dir := w.clone("a")
	b := open(t, dir)
	create(t, b, "alice", "A1", "A2", "A3")
	if _, err := b.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	s := syncer(t, b, Options{Actor: "alice"})
	res, err := s.Commit(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || res.Message != "bl: created A1 A2 A3; A1 claimed by alice\n" {
		t.Fatalf("first commit: %+v", res)
	}
	again, err := s.Commit(bg)
	if err != nil {
		t.Fatal(err)
	}
	if again.Committed || again.Commit != res.Commit {
		t.Fatalf("second commit was not a no-op: %+v", again)
	}
	// git agrees: the backlog files are committed and unchanged, the lock
	// and other local files are not tracked.
	if st := w.git(dir, "status", "--porcelain", "--", ".backlog"); st != "" {
		t.Fatalf("git status shows changes:\n%s", st)
	}
	files := w.git(dir, "ls-files", ".backlog")
	if files != ".backlog/.gitattributes\n.backlog/.gitignore\n.backlog/config.json\n.backlog/ledger.jsonl\n" {
		t.Fatalf("tracked files:\n%s", files)
	}
	author := w.git(dir, "log", "-1", "--format=%an <%ae>|%cn|%s")
	if author != "alice <tester@example.com>|alice|bl: created A1 A2 A3; A1 claimed by alice\n" {
		t.Fatalf("author, committer, subject: %q", author)
	}
	// The committed ledger is the ledger, byte for byte.
	want, _ := os.ReadFile(filepath.Join(dir, ".backlog", ledger.LedgerFile))
	if got := w.git(dir, "show", "HEAD:.backlog/ledger.jsonl"); got != string(want) {
		t.Fatal("committed ledger differs from the file")
	}
	// -m becomes the subject, the summary the body.
	create(t, b, "alice", "A4")
	s.o.Message = "triage"
	if _, err := s.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if msg := w.git(dir, "log", "-1", "--format=%B"); msg != "triage\n\nbl: created A4\n\n" {
		t.Fatalf("message %q", msg)
	}
}

func TestCommitKeepsOtherFilesAndWorksFromAWorktree(t *testing.T) {
	w := newWorld(t)
	dir := w.clone("a")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git(dir, "add", "main.go")
	w.git(dir, "commit", "-q", "-m", "code")
	b := open(t, dir)
	create(t, b, "alice", "A1")
	// Staged, uncommitted work of the user's is not swept into bl's commit.
	if err := os.WriteFile(filepath.Join(dir, "wip.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git(dir, "add", "wip.go")
	if _, err := syncer(t, b, Options{}).Commit(bg); err != nil {
		t.Fatal(err)
	}
	if files := w.git(dir, "ls-tree", "-r", "--name-only", "HEAD"); files != ".backlog/.gitattributes\n.backlog/.gitignore\n.backlog/config.json\n.backlog/ledger.jsonl\nmain.go\n" {
		t.Fatalf("HEAD holds:\n%s", files)
	}
	if st := w.git(dir, "status", "--porcelain"); st != "A  wip.go\n" {
		t.Fatalf("status:\n%s", st)
	}
	// A linked worktree shares the main worktree's backlog; a sync run on
	// it commits to the main worktree's branch.
	w.git(dir, "worktree", "add", "-q", filepath.Join(w.root, "wt"))
	create(t, b, "alice", "A2")
	bw := open(t, dir) // what bl in the worktree opens: the main worktree's .backlog
	res, err := syncer(t, bw, Options{}).Commit(bg)
	if err != nil || !res.Committed || res.Branch != "main" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestTwoClonesConverge(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin", Actor: "alice"}), syncer(t, b, Options{Remote: "origin", Actor: "bob"})

	create(t, a, "alice", "A1", "A2", "S")
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	// Both change the backlog independently, including a race for S.
	create(t, b, "bob", "B1", "B2")
	claim := func(bk *ledger.Backlog, owner, id string) {
		if _, err := bk.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, Owner: owner, ID: id, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	claim(a, "alice", "S")
	claim(b, "bob", "S")
	claim(b, "bob", "B1")
	if _, err := b.Complete(bg, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "bob"}, ID: "B1", Owner: "bob", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	create(t, a, "alice", "A3")
	if _, err := sa.Commit(bg); err != nil { // a local commit: her push is a merge
		t.Fatal(err)
	}

	if _, err := sb.Push(bg, Hooks{}); err != nil { // bob first: his claim of S wins
		t.Fatal(err)
	}
	ra, err := sa.Push(bg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if ra.Pulled != 5 || ra.Rebased != 2 || !ra.Pushed {
		t.Fatalf("alice's push: %+v", ra)
	}
	rb, err := sb.Pull(bg)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Pulled != 2 {
		t.Fatalf("bob's pull: %+v", rb)
	}
	ca, cb := cards(t, a), cards(t, b)
	if ca != cb {
		t.Fatalf("clones differ:\n%s\n%s", ca, cb)
	}
	if !strings.Contains(ca, "S claimed bob#1") || !strings.Contains(ca, "B1 done") {
		t.Fatalf("state:\n%s", ca)
	}
	ia, ib := eventIDs(t, a), eventIDs(t, b)
	if !slices.Equal(ia, ib) || len(ia) != 10 {
		t.Fatalf("events: %d vs %d", len(ia), len(ib))
	}
	ta, _ := a.Tree(bg)
	tb, _ := b.Tree(bg)
	if !ta.Equal(tb) {
		t.Fatal("the backlog files differ")
	}
	// Alice's losing claim is a recorded conflict on both sides.
	var conflicts int
	_ = a.View(func(s *ledger.State, _ time.Time) error { conflicts = len(s.Conflicts()); return nil })
	if conflicts != 1 {
		t.Fatalf("%d conflicts", conflicts)
	}
	// History: alice's merge commit has both parents; bob then
	// fast-forwarded to it.
	if parents := strings.Fields(w.git(da, "log", "-1", "--format=%P", "origin/main")); len(parents) != 2 {
		t.Fatalf("alice's push is not a merge: %v", parents)
	}
	if ha, hb := w.git(da, "rev-parse", "HEAD"), w.git(db, "rev-parse", "HEAD"); ha != hb {
		t.Fatalf("heads differ: %s %s", ha, hb)
	}
	for _, d := range []string{da, db} {
		if st := w.git(d, "status", "--porcelain", "--", ".backlog"); st != "" {
			t.Fatalf("%s: git status:\n%s", d, st)
		}
	}
}

func TestPushRejectedIsRetried(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin"}), syncer(t, b, Options{Remote: "origin"})
	create(t, a, "alice", "A1")
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	create(t, a, "alice", "A2")
	create(t, b, "bob", "B1")
	// Bob pushes after alice fetched and before she pushes.
	var rounds []int
	res, err := sa.Push(bg, Hooks{Prepare: func(ctx context.Context, round int) error {
		rounds = append(rounds, round)
		if round == 1 {
			if _, err := sb.Push(ctx, Hooks{}); err != nil {
				t.Error(err)
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tries != 2 || !slices.Equal(rounds, []int{1, 2}) {
		t.Fatalf("tries %d, rounds %v", res.Tries, rounds)
	}
	remote := w.git(da, "show", "origin/main:.backlog/ledger.jsonl")
	for _, id := range []string{`"A1"`, `"A2"`, `"B1"`} {
		if !strings.Contains(remote, `"card":`+id) {
			t.Fatalf("remote lacks %s:\n%s", id, remote)
		}
	}
	if got := w.git(w.bare, "rev-parse", "main"); strings.TrimSpace(got) != res.Commit {
		t.Fatalf("remote at %s, pushed %s", got, res.Commit)
	}
}

func TestUnreachableRemoteLeavesBacklogAlone(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "alice", "A1")
	if _, err := syncer(t, a, Options{}).Commit(bg); err != nil {
		t.Fatal(err)
	}
	create(t, a, "alice", "A2")
	before, _ := a.Tree(bg)
	head := w.git(da, "rev-parse", "HEAD")
	w.git(da, "remote", "set-url", "origin", filepath.Join(w.root, "gone.git"))
	s := syncer(t, a, Options{Remote: "origin"})
	for _, f := range []func() (Result, error){
		func() (Result, error) { return s.Push(bg, Hooks{}) },
		func() (Result, error) { return s.Pull(bg) },
	} {
		_, err := f()
		var re *RemoteError
		if !errors.Is(err, ErrRemote) || !errors.As(err, &re) || re.Op != "fetch" {
			t.Fatalf("want a fetch RemoteError, got %v", err)
		}
		if !strings.Contains(err.Error(), "origin") || !strings.Contains(err.Error(), "keeps everything") {
			t.Fatalf("unclear error: %v", err)
		}
	}
	after, _ := a.Tree(bg)
	if !before.Equal(after) {
		t.Fatal("the backlog changed")
	}
	if now := w.git(da, "rev-parse", "HEAD"); now != head {
		t.Fatal("HEAD moved")
	}
	// An unknown remote name is as clear.
	if _, err := New(a, Options{Remote: "nowhere"}); !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("unknown remote: %v", err)
	}
}

func TestDivergedCodeIsLeftToGit(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	sa, sb := syncer(t, a, Options{Remote: "origin"}), syncer(t, b, Options{Remote: "origin"})
	create(t, a, "alice", "A1")
	pushCodeFromB(t, w, sa, sb, db) // bob pushes code with git
	// Alice's checked-out main lacks it: bl does not move her worktree.
	create(t, a, "alice", "A2")
	before, _ := a.Tree(bg)
	_, err := sa.Push(bg, Hooks{})
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), " pull --no-rebase --no-edit origin main && bl sync --push") {
		t.Fatalf("want ErrDiverged, got %v", err)
	}
	// The backlog is as it was, committed: nothing of bob's was applied,
	// so git pull can merge.
	after, _ := a.Tree(bg)
	if !after.Equal(before) {
		t.Fatal("a diverged push changed the backlog")
	}
	if st := w.git(da, "status", "--porcelain", "--", ".backlog"); st != "" {
		t.Fatalf("the backlog is left uncommitted: %s", st)
	}
	// After git pull (merge driver not needed: only bob touched code) the
	// sync goes through.
	w.git(da, "pull", "-q", "--no-rebase", "origin", "main")
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if got := w.git(da, "show", "origin/main:code.txt"); got != "bob\n" {
		t.Fatalf("code.txt %q", got)
	}
	// Alice's own code changes merge with bob's backlog-only pushes.
	if err := os.WriteFile(filepath.Join(da, "alice.txt"), []byte("alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git(da, "add", "alice.txt")
	w.git(da, "commit", "-q", "-m", "alice code")
	w.git(db, "pull", "-q", "--no-rebase", "origin", "main")
	create(t, b, "bob", "B9")
	if _, err := sb.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	create(t, a, "alice", "A9")
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	tree := w.git(da, "ls-tree", "--name-only", "origin/main")
	if tree != ".backlog\nalice.txt\ncode.txt\n" {
		t.Fatalf("remote tree:\n%s", tree)
	}
}

func TestDedicatedBranch(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	if err := os.WriteFile(filepath.Join(da, "code.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git(da, "add", "code.txt")
	w.git(da, "commit", "-q", "-m", "code")
	a, b := open(t, da), open(t, db)
	sa := syncer(t, a, Options{Remote: "origin", Branch: "backlog"})
	sb := syncer(t, b, Options{Remote: "origin", Branch: "backlog"})
	create(t, a, "alice", "A1")
	create(t, b, "bob", "B1")
	for _, s := range []*Syncer{sa, sb, sa} {
		if _, err := s.Push(bg, Hooks{}); err != nil {
			t.Fatal(err)
		}
	}
	if cards(t, a) != cards(t, b) {
		t.Fatalf("differ:\n%s\n%s", cards(t, a), cards(t, b))
	}
	// The branch holds only the backlog; main and the index are untouched.
	if tree := w.git(da, "ls-tree", "--name-only", "backlog"); tree != ".backlog\n" {
		t.Fatalf("backlog branch holds:\n%s", tree)
	}
	if cur := w.git(da, "rev-parse", "--abbrev-ref", "HEAD"); cur != "main\n" {
		t.Fatalf("HEAD is %s", cur)
	}
	if st := w.git(da, "status", "--porcelain", "--", ".backlog"); st != "?? .backlog/\n" {
		t.Fatalf("status:\n%s", st)
	}
}

func TestMergeDriverAndSetup(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	// An older bl init's lines in the root .gitattributes are removed;
	// the backlog's own .gitattributes (ledger.Init) replaces them.
	old := "*.png binary\n# bl: merge the backlog by event, never with conflict markers (bl help init)\n.backlog/ledger.jsonl merge=bl -text\n.backlog/snapshot.json merge=bl-snapshot -text\n"
	if err := os.WriteFile(filepath.Join(da, ".gitattributes"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	setup, err := SetupMerge(filepath.Join(da, ".backlog"))
	if err != nil || !setup.Changed {
		t.Fatal(setup, err)
	}
	again, err := SetupMerge(filepath.Join(da, ".backlog"))
	if err != nil || again.Changed {
		t.Fatalf("second setup changed something: %+v %v", again, err)
	}
	if got, _ := os.ReadFile(filepath.Join(da, ".gitattributes")); string(got) != "*.png binary\n" {
		t.Fatalf("root .gitattributes:\n%s", got)
	}
	if got := w.git(da, "check-attr", "merge", "--", ".backlog/ledger.jsonl", ".backlog/archive/1-a.jsonl", ".backlog/snapshot.json"); got !=
		".backlog/ledger.jsonl: merge: union\n.backlog/archive/1-a.jsonl: merge: union\n.backlog/snapshot.json: merge: union\n" {
		t.Fatalf("attributes:\n%s", got)
	}
	if _, err := SetupMerge(t.TempDir()); !errors.Is(err, ErrNoRepo) {
		t.Fatalf("outside git: %v", err)
	}

	// The driver itself: the union of three versions, in order.
	b := open(t, da)
	create(t, b, "x", "C1", "C2")
	base, _ := os.ReadFile(filepath.Join(da, ".backlog", ledger.LedgerFile))
	create(t, b, "x", "C3")
	ours, _ := os.ReadFile(filepath.Join(da, ".backlog", ledger.LedgerFile))
	theirs := append(append([]byte(nil), base...), ours[len(base):]...)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o, a2, th := write("O", base), write("A", base), write("B", theirs)
	if err := MergeDriver(o, a2, th); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a2); !bytes.Equal(got, ours) {
		t.Fatalf("merged:\n%s", got)
	}
	// Input that is not an event file (conflict markers an older merge
	// left) falls back to git's union of the lines: the driver never
	// fails a merge merge=union would make.
	bad := write("bad", []byte("<<<<<<< ours\n"))
	if err := MergeDriver(o, a2, bad); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a2); string(got) != string(ours)+"<<<<<<< ours\n" {
		t.Fatalf("union fallback:\n%s", got)
	}
}

// TestRemoteClaimsRace: 3 clones, 4 claimers each, one bare remote, 16
// cards (50 with BL_STRESS=1, make stress). Every card is acknowledged to
// exactly one claimer, and the final ledger agrees. 16 cards among 12
// claimers keep every round contended: with the lease ref's
// compare-and-swap taken out, every run of 16 acknowledges 23 to 26
// claims.
func TestRemoteClaimsRace(t *testing.T) {
	const clones, perClone = 3, 4
	ncards := 16
	if os.Getenv("BL_STRESS") != "" {
		ncards = 50
	}
	w := newWorld(t)
	seed := w.clone("seed")
	sb := open(t, seed)
	var ids []string
	for i := range ncards {
		ids = append(ids, "C"+string(rune('A'+i/26))+string(rune('a'+i%26)))
	}
	create(t, sb, "seed", ids...)
	if _, err := syncer(t, sb, Options{Remote: "origin"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	type ack struct {
		card, owner string
		epoch       int64
	}
	var (
		mu   sync.Mutex
		acks []ack
		wg   sync.WaitGroup
	)
	dirs := make([]string, clones)
	for c := range clones {
		dirs[c] = w.clone(string(rune('p' + c)))
		if _, err := syncer(t, open(t, dirs[c]), Options{Remote: "origin"}).Pull(bg); err != nil {
			t.Fatal(err)
		}
	}
	for c := range clones {
		for p := range perClone {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := string(rune('p'+c)) + "-" + string(rune('0'+p))
				b, err := ledger.Open(filepath.Join(dirs[c], ".backlog"), ledger.Options{LockTimeout: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				s, err := New(b, Options{Remote: "origin", Actor: owner, Tries: 200})
				if err != nil {
					t.Error(err)
					return
				}
				for {
					card, _, err := s.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: owner}, Owner: owner, TTL: time.Hour})
					if err != nil {
						t.Error(owner, err)
						return
					}
					if card == nil {
						return
					}
					mu.Lock()
					acks = append(acks, ack{card.ID, owner, card.ClaimEpoch})
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	won := map[string]ack{}
	for _, a := range acks {
		if prev, dup := won[a.card]; dup {
			t.Errorf("card %s acknowledged to %s (epoch %d) and %s (epoch %d)", a.card, prev.owner, prev.epoch, a.owner, a.epoch)
		}
		won[a.card] = a
	}
	if len(won) != ncards {
		t.Errorf("%d of %d cards acknowledged", len(won), ncards)
	}
	// The remote's ledger, as every clone sees it after a pull, agrees.
	final := open(t, dirs[0])
	if _, err := syncer(t, final, Options{Remote: "origin"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	err := final.View(func(s *ledger.State, _ time.Time) error {
		t.Logf("%d events, %d voided claims in the final ledger", s.Events(), len(s.Conflicts()))
		for _, id := range ids {
			c, _ := s.Card(id)
			a := won[id]
			if c.Status != ledger.StatusClaimed || c.ClaimOwner != a.owner || c.ClaimEpoch != a.epoch {
				t.Errorf("card %s: ledger says %s by %s#%d, acknowledged to %s#%d", id, c.Status, c.ClaimOwner, c.ClaimEpoch, a.owner, a.epoch)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	treeIDs(t, func() ledger.Tree { tr, _ := final.Tree(bg); return tr }())
	t.Logf("%d claims acknowledged", len(acks))
}

// TestSummarizeNamesCards: a commit message names the cards a reviewer
// needs, grouped by what happened to them, and stays short.
func TestSummarizeNamesCards(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var n int
	ev := func(op ledger.Op, card string, f func(*ledger.Event)) *ledger.Event {
		n++
		e := &ledger.Event{V: 1, ID: fmt.Sprintf("%016x", n), At: at.Add(time.Duration(n)), Actor: "x", Op: op, Card: card}
		if f != nil {
			f(e)
		}
		return e
	}
	owner := func(o string) func(*ledger.Event) {
		return func(e *ledger.Event) { e.Owner = o; e.Epoch = 1; e.TTLSeconds = 60 }
	}
	title := func(e *ledger.Event) { t := "t"; e.Fields = &ledger.Fields{Title: &t} }
	var evs []*ledger.Event
	for _, id := range []string{"A1", "A2", "A5", "A6", "A7", "A8", "A9"} {
		evs = append(evs, ev(ledger.OpCreate, id, title))
	}
	evs = append(evs,
		ev(ledger.OpClaim, "A1", owner("w1")), ev(ledger.OpClaim, "A2", owner("w2")), ev(ledger.OpClaim, "A5", owner("w1")),
		ev(ledger.OpHeartbeat, "A1", owner("w1")), ev(ledger.OpHeartbeat, "A1", owner("w1")),
		ev(ledger.OpComplete, "A2", owner("w2")),
		ev(ledger.OpLink, "A6", func(e *ledger.Event) { e.To = "A1" }),
	)
	var ledgerBytes []byte
	for _, e := range evs {
		line, err := ledger.EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		ledgerBytes = append(ledgerBytes, line...)
	}
	got := Summarize(ledger.Tree{}, ledger.Tree{ledger.LedgerFile: ledgerBytes})
	want := "created A1 A2 A5 A6 A7 +2 more; A1 A5 claimed by w1, A2 claimed by w2; 2 heartbeats; A2 done; linked A6→A1"
	if got != want {
		t.Fatalf("Summarize =\n  %q\nwant\n  %q", got, want)
	}
}

// TestFirstPullTakesTheRemotesSettings: a clone that only ran bl init has
// settings nobody edited; its first pull takes the remote's config.json
// (say, claims.remote), as a pull should. A local edit still wins.
func TestFirstPullTakesTheRemotesSettings(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	db := w.clone("b") // bl init before the remote had a backlog: settings nobody edited
	cfg := strings.Replace(ledger.DefaultConfig, `"version": 1`, `"version": 1, "claims": {"remote": "origin"}`, 1)
	if cfg == ledger.DefaultConfig {
		t.Fatal("test setup: could not edit the default config")
	}
	if err := os.WriteFile(filepath.Join(da, ".backlog", ledger.ConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	a := open(t, da)
	create(t, a, "alice", "A1")
	if _, err := syncer(t, a, Options{Remote: "origin"}).Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := syncer(t, open(t, db), Options{Remote: "origin"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(db, ".backlog", ledger.ConfigFile)); string(got) != cfg {
		t.Fatalf("after the first pull config.json is\n%s\nwant the remote's\n%s", got, cfg)
	}

	dc := w.clone("c")
	mine := strings.Replace(ledger.DefaultConfig, `"version": 1`, `"version": 1, "sync": {"auto": "commit"}`, 1)
	if err := os.WriteFile(filepath.Join(dc, ".backlog", ledger.ConfigFile), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := syncer(t, open(t, dc), Options{Remote: "origin"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dc, ".backlog", ledger.ConfigFile)); string(got) != mine {
		t.Fatalf("a local edit was replaced by the remote's settings:\n%s", got)
	}
}

// pushCodeFromB publishes a's backlog, lets b pull it, then pushes a code
// commit from b with plain git: a's checked-out branch now lacks a change
// outside the backlog.
func pushCodeFromB(t *testing.T, w *world, sa, sb *Syncer, db string) {
	t.Helper()
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(db, "code.txt"), []byte("bob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git(db, "add", "code.txt")
	w.git(db, "commit", "-q", "-m", "code")
	w.git(db, "push", "-q", "origin", "main")
}
