package proof

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// TestGitMergeAndRebase: three clones on one branch, none but the first
// ever ran bl init, diverge round after round (creates, local claims of
// one card on two clones at once, updates, completes) and meet with plain
// git pull, one merging and one rebasing.
func TestGitMergeAndRebase(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "merge")
	a := w.seed("a", plainGit, nil)
	for i := 1; i <= 4; i++ {
		a.do("create", "--id", fmt.Sprintf("S%d", i), "--title", "seeded")
	}
	a.publishSeed()
	b := w.clone("b", plainGit)
	c := w.clone("c", plainGit)
	c.rebase = true

	rounds := 3
	if stress() {
		rounds = 12
	}
	for r := 1; r <= rounds; r++ {
		// Every clone writes on the same base before anyone shares.
		contested := fmt.Sprintf("S%d", (r-1)%4+1)
		for _, x := range []*clone{a, b, c} {
			id := fmt.Sprintf("%s%d", strings.ToUpper(x.name), r)
			x.do("create", "--id", id, "--title", "round "+strconv.Itoa(r)+" on "+x.name, "--priority", strconv.Itoa(r))
			x.do("update", id, "--body", "edited on "+x.name)
			cl := x.do("claim", "--id", id, "--owner", x.name, "--ttl", "1h")
			x.do("complete", "--id", id, "--owner", x.name, "--epoch", strconv.FormatInt(w.card(cl).ClaimEpoch, 10))
		}
		// a and b claim one card locally at the same epoch: merged, the
		// fold keeps one and records the other as a conflict, the same
		// way in every clone.
		a.do("claim", "--id", contested, "--owner", "a", "--ttl", "1h")
		b.do("claim", "--id", contested, "--owner", "b", "--ttl", "1h")
		a.share(fmt.Sprintf("a: round %d", r))
		b.share(fmt.Sprintf("b: round %d", r)) // a merge
		c.share(fmt.Sprintf("c: round %d", r)) // a rebase
		// The contested card goes back to the pool from whoever won it.
		a.pull()
		x := a.mustBL("show", contested, "--json")
		owner := w.card(x).ClaimOwner
		winner := map[string]*clone{"a": a, "b": b}[owner]
		if winner == nil {
			t.Fatalf("round %d: %s is held by %q after the merge, want a or b", r, contested, owner)
		}
		winner.pull()
		winner.do("release", "--id", contested, "--owner", owner, "--epoch", strconv.FormatInt(w.card(x).ClaimEpoch, 10))
		winner.share(fmt.Sprintf("%s: release %s", owner, contested))
	}
	vs := w.finish(nil)
	t.Logf("merge and rebase: %d rounds, %d events, %d bl calls", rounds, len(vs[0].ids), len(w.calls))
}

// TestGitMarkersCaught is the suite's negative control for conflict
// markers: a clone whose .git/info/attributes overrides the tracked union
// rule with merge=text gets markers from a plain git pull, and the check
// every scenario ends with sees them.
func TestGitMarkersCaught(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "markers")
	a := w.seed("a", plainGit, nil)
	a.do("create", "--id", "S0", "--title", "seeded")
	a.publishSeed()
	b := w.clone("b", plainGit)
	if err := os.WriteFile(filepath.Join(b.dir, ".git", "info", "attributes"), []byte(".backlog/ledger.jsonl merge=text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.do("create", "--id", "A1", "--title", "from a")
	a.share("a: A1")
	b.do("create", "--id", "B1", "--title", "from b")
	b.commit("b: B1")
	if out, err := b.tryGit("pull", "-q", "--no-rebase", "origin", "main"); err == nil {
		t.Fatalf("git pull with merge=text merged two appends without a conflict:\n%s", out)
	}
	m := b.markers()
	if !strings.Contains(m, "ledger.jsonl:") || !strings.Contains(m, "<<<<<<<") || !strings.Contains(m, ">>>>>>>") {
		t.Fatalf("the marker check missed git's conflict markers; it found:\n%s", m)
	}
	if d := b.bl("b", "doctor", "--json"); d.Exit != 6 {
		t.Errorf("bl doctor on a ledger with conflict markers exited %d, want 6", d.Exit)
	}
}

// TestGitCherryPick: backlog commits cherry-picked onto another branch, on
// their own (a complete without the commit that created its card) and
// before the branch they came from is merged too (every line twice).
func TestGitCherryPick(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "pick")
	a := w.seed("a", plainGit, nil)
	a.do("create", "--id", "M0", "--title", "on main")
	a.publishSeed()
	b := w.clone("b", plainGit)

	// topic: T1 created and claimed (commit X), then completed (commit Y).
	a.git("checkout", "-q", "-b", "topic")
	a.do("create", "--id", "T1", "--title", "on topic")
	a.do("create", "--id", "T2", "--title", "on topic too")
	cl := a.do("claim", "--id", "T1", "--owner", "a", "--ttl", "1h")
	a.commit("topic: T1 T2, claim T1")
	x := strings.TrimSpace(a.git("rev-parse", "HEAD"))
	a.do("complete", "--id", "T1", "--owner", "a", "--epoch", strconv.FormatInt(w.card(cl).ClaimEpoch, 10))
	a.commit("topic: T1 done")
	y := strings.TrimSpace(a.git("rev-parse", "HEAD"))
	a.git("push", "-q", "origin", "topic")

	// main moves on, then takes X by cherry-pick.
	a.git("checkout", "-q", "main")
	a.do("create", "--id", "M1", "--title", "main after the fork")
	a.commit("main: M1")
	a.git("cherry-pick", x)
	a.healthy("after cherry-pick of X")
	if got := a.mustBL("show", "T1", "--json"); w.card(got).ClaimOwner != "a" {
		t.Errorf("after the cherry-pick T1 is %s", got.Stdout)
	}
	a.push()

	// b cherry-picks Y alone: the complete of a card its branch does not
	// have yet.
	b.do("create", "--id", "B1", "--title", "on b")
	b.commit("b: B1")
	b.git("fetch", "-q", "origin", "topic")
	if out, err := b.tryGit("cherry-pick", y); err != nil {
		t.Fatalf("b: git cherry-pick Y: %v\n%s%s", err, out, b.markers())
	}
	b.healthy("after cherry-pick of Y alone")
	b.pull()
	if got := w.card(b.mustBL("show", "T1", "--json")); got.Status != "done" {
		t.Errorf("b: T1 is %s once X arrived after Y, want done", got.Status)
	}
	b.push()

	// Then the topic branch itself is merged: X and Y a second time.
	a.pull()
	a.git("merge", "-q", "--no-edit", "topic")
	a.healthy("after merging the cherry-picked branch")
	a.do("create", "--id", "M2", "--title", "after the merge")
	a.share("main: M2")
	vs := w.finish(nil)
	t.Logf("cherry-pick: %d events", len(vs[0].ids))
}

// TestGitBothCompacted: clones compact (bl compact) on both sides of a
// fork and meet with a plain git merge and a plain git rebase: two archive
// segments each, a union of two snapshots, ledger lines one side moved out.
func TestGitBothCompacted(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "compact")
	a := w.seed("a", plainGit, nil)
	for i := 1; i <= 6; i++ {
		a.do("create", "--id", fmt.Sprintf("S%d", i), "--title", "seeded")
	}
	a.publishSeed()
	b := w.clone("b", plainGit)
	c := w.clone("c", plainGit)
	c.rebase = true

	rounds := 2
	if stress() {
		rounds = 8
	}
	for r := 1; r <= rounds; r++ {
		for _, x := range []*clone{a, b, c} {
			id := fmt.Sprintf("%s%d", strings.ToUpper(x.name), r)
			x.do("create", "--id", id, "--title", "before compaction")
			cl := x.do("claim", "--id", id, "--owner", x.name, "--ttl", "1h")
			x.mustBL("compact")
			x.do("complete", "--id", id, "--owner", x.name, "--epoch", strconv.FormatInt(w.card(cl).ClaimEpoch, 10))
			x.do("update", fmt.Sprintf("S%d", (r-1)%6+1), "--title", "retitled on "+x.name+" in round "+strconv.Itoa(r))
			x.mustBL("compact")
			x.commit(fmt.Sprintf("%s: round %d, compacted", x.name, r))
		}
		a.push()
		b.pull() // a merge of two compacted sides
		b.do("create", "--id", fmt.Sprintf("BB%d", r), "--title", "written after the merge")
		b.commit("b: after the merge")
		b.push()
		c.pull() // a rebase of a compacted side onto a compacted side
		c.push()
		a.pull()
	}
	vs := w.finish(nil)
	segs, _ := filepath.Glob(filepath.Join(a.dir, ".backlog", ledger.ArchiveDir, "*.jsonl"))
	t.Logf("both compacted: %d rounds, %d events, %d archive segments", rounds, len(vs[0].ids), len(segs))
	if len(segs) < 2 {
		t.Errorf("%d archive segments after compactions on three clones, want several", len(segs))
	}
}

// TestGitCRLFClones: a clone with core.autocrlf=true and one whose
// .git/info/attributes says "* text=auto eol=crlf" (which overrides the
// tracked -text) write events, commit, merge and push with plain git next
// to an LF clone; one of them also exchanges with bl sync --push.
func TestGitCRLFClones(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "crlf")
	a := w.seed("a", plainGit, nil)
	a.do("create", "--id", "A0", "--title", "seeded")
	a.publishSeed()
	d := w.clone("d", plainGit, "-c", "core.autocrlf=true")
	e := w.clone("e", plainGit, "--no-checkout")
	if err := os.MkdirAll(filepath.Join(e.dir, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, ".git", "info", "attributes"), []byte("* text=auto eol=crlf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.git("checkout", "-q", "main")
	if !bytes.Contains(readFile(t, filepath.Join(e.dir, ".backlog", ledger.LedgerFile)), []byte("\r\n")) {
		t.Fatalf("e: info/attributes eol=crlf did not check the ledger out with CRLF line ends")
	}

	rounds := 3
	if stress() {
		rounds = 10
	}
	for r := 1; r <= rounds; r++ {
		for _, x := range []*clone{a, d, e} {
			id := fmt.Sprintf("%s%d", strings.ToUpper(x.name), r)
			x.do("create", "--id", id, "--title", "round "+strconv.Itoa(r)+" on "+x.name, "--body", "line one\nline two")
			cl := x.do("claim", "--id", id, "--owner", x.name, "--ttl", "1h")
			x.do("complete", "--id", id, "--owner", x.name, "--epoch", strconv.FormatInt(w.card(cl).ClaimEpoch, 10))
			x.do("note", "--id", "A0", "noted on "+x.name)
			x.commit(fmt.Sprintf("%s: round %d", x.name, r))
		}
		a.share("a")
		d.share("d")
		switch r {
		case 1:
			e.share("e")
			d.mustBL("compact")
			d.share("d: compacted") // e checks d's segment and snapshot out with CRLF
		case 2:
			// The CRLF work tree compacts and exchanges by bl-git
			// instead of git.
			e.mustBL("compact")
			e.mode = blSync
			e.syncPush()
			e.mode = plainGit
			e.pull()
		default:
			e.mustBL("compact")
			e.share("e: compacted")
		}
	}
	if b := readFile(t, filepath.Join(d.dir, ".backlog", ledger.LedgerFile)); bytes.Contains(b, []byte("\r\n")) {
		t.Errorf("d: core.autocrlf=true converted the ledger despite the tracked -text")
	}
	crlf := 0
	segs, _ := filepath.Glob(filepath.Join(e.dir, ".backlog", ledger.ArchiveDir, "*.jsonl"))
	for _, f := range append(segs, filepath.Join(e.dir, ".backlog", ledger.LedgerFile), filepath.Join(e.dir, ".backlog", ledger.SnapshotFile)) {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte("\r\n")) {
			crlf++
		}
	}
	vs := w.finish(nil)
	t.Logf("crlf: %d rounds, %d events; %d of e's %d event and snapshot files have CRLF line ends", rounds, len(vs[0].ids), crlf, len(segs)+2)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGitOfflineClone: a clone goes offline and writes 300 events (enough
// bytes for automatic compaction) while one clone keeps pushing with bl
// sync --push and one with plain git; then it syncs late with bl sync
// --push while they still push. Offline it also claimed a card, before
// an online clone claimed the same card and pushed: what the remote
// accepted first stays first, whatever the stamps.
func TestGitOfflineClone(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "offline")
	// A small compaction threshold: the offline clone compacts on its own
	// after a hundred events, not the thousands the default takes.
	a := w.seed("a", blSync, func(cfg map[string]any) { cfg["compact_bytes"] = 16 << 10 })
	a.do("create", "--id", "S0", "--title", "seeded")
	a.publishSeed()
	o := w.clone("o", blSync)
	b := w.clone("b", plainGit)
	o.do("claim", "--id", "S0", "--owner", "o", "--ttl", "1h")
	a.do("claim", "--id", "S0", "--owner", "a", "--ttl", "1h")
	a.syncPush()

	events := 100
	if stress() {
		events = 1500
	}
	// The others push once per pace offline events while the clone is
	// offline, twice more each while its sync runs, and twice more once
	// it is done. (Unpaced, a clone whose sync rounds are slower than the
	// others' pushes never gets a push in, and bl sync gives up after 10
	// rounds: that is the compare-and-swap, not what this test is about.)
	const pace = 25
	st := newOffline()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	start := time.Now()
	var wrote, syncedAt time.Duration
	var report struct{ Pulled, Rebased, Tries int }
	var segsBefore int
	offline := func() {
		defer wg.Done()
		defer st.set(func() { st.phase = phaseSynced })
		if err := offlineWork(o, events, st); err != nil {
			errs <- err
			return
		}
		wrote = time.Since(start)
		segs, _ := filepath.Glob(filepath.Join(o.dir, ".backlog", ledger.ArchiveDir, "*.jsonl"))
		segsBefore = len(segs)
		st.set(func() { st.phase = phaseSyncing })
		call := o.bl("o", "sync", "--push", "--json")
		for i := 0; call.Exit != 0 && i < 5 && call.ErrorCode() == "remote"; i++ {
			call = o.bl("o", "sync", "--push", "--json")
		}
		if call.Exit != 0 {
			errs <- fmt.Errorf("o: bl sync --push of %d offline events: exit %d: %s", events, call.Exit, call.Stderr)
			return
		}
		_ = json.Unmarshal(call.Stdout, &report)
		syncedAt = time.Since(start)
	}
	online := func(x *clone, push func(*clone, int) error) {
		defer wg.Done()
		during, after := 0, 0
		for i := 0; ; i++ {
			phase := st.wait(func() bool { return st.written >= (i+1)*pace || st.phase != phaseWriting })
			switch {
			case phase == phaseSyncing && during == 2:
				st.wait(func() bool { return st.phase == phaseSynced })
				continue
			case phase == phaseSyncing:
				during++
			case phase == phaseSynced && after == 2:
				return
			case phase == phaseSynced:
				after++
			}
			if err := push(x, i); err != nil {
				errs <- err
				return
			}
		}
	}
	viaSync := func(x *clone, i int) error {
		if _, err := x.tryDo("create", "--id", fmt.Sprintf("A%03d", i), "--title", "online"); err != nil {
			return err
		}
		call := x.bl(x.name, "sync", "--push", "--json")
		if call.Exit != 0 && call.ErrorCode() != "remote" {
			return fmt.Errorf("a: bl sync --push: exit %d: %s", call.Exit, call.Stderr)
		}
		return nil
	}
	viaGit := func(x *clone, i int) error {
		if _, err := x.tryDo("create", "--id", fmt.Sprintf("B%03d", i), "--title", "online, plain git"); err != nil {
			return err
		}
		for _, args := range [][]string{{"add", "-A", ".backlog"}, {"commit", "-q", "-m", "b"}} {
			if out, err := x.tryGit(args...); err != nil {
				return fmt.Errorf("b: git %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		for k := 0; ; k++ {
			if out, err := x.tryGit("pull", "-q", "--no-rebase", "origin", "main"); err != nil {
				return fmt.Errorf("b: git pull: %v\n%s%s", err, out, x.markers())
			}
			if m := x.markers(); m != "" {
				return fmt.Errorf("b: conflict markers after git pull:\n%s", m)
			}
			out, err := x.tryGit("push", "-q", "origin", "HEAD:main")
			if err == nil {
				return nil
			}
			if k == 50 || !rejected(out) {
				return fmt.Errorf("b: git push, attempt %d: %v\n%s", k+1, err, out)
			}
		}
	}
	wg.Add(3)
	go offline()
	go online(a, viaSync)
	go online(b, viaGit)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	o.healthy("after the late sync")
	if got := w.card(o.mustBL("show", "S0", "--json")); got.ClaimOwner != "a" {
		t.Errorf("after the late sync S0 is held by %q, want a, whose claim reached the remote first", got.ClaimOwner)
	}
	elapsed := time.Since(start)
	segs, _ := filepath.Glob(filepath.Join(o.dir, ".backlog", ledger.ArchiveDir, "*.jsonl"))
	vs := w.finish(nil)
	t.Logf("offline: %d offline events written in %s, synced late at %s (pulled %d, rebased %d, %d tries), all done at %s; %d events in all; archive segments in the offline clone: %d before its sync, %d after",
		events, wrote.Round(time.Millisecond), syncedAt.Round(time.Millisecond), report.Pulled, report.Rebased, report.Tries,
		elapsed.Round(time.Millisecond), len(vs[0].ids), segsBefore, len(segs))
	if segsBefore == 0 {
		t.Errorf("%d offline events did not compact automatically: the late sync carried no compaction", events)
	}
}

// Phases of the offline clone.
const (
	phaseWriting = iota
	phaseSyncing
	phaseSynced
)

// offlineState is what the online clones of TestGitOfflineClone wait on.
type offlineState struct {
	mu      sync.Mutex
	cond    *sync.Cond
	written int
	phase   int
}

func newOffline() *offlineState {
	s := &offlineState{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *offlineState) set(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	s.cond.Broadcast()
}

// wait blocks until ok holds (called with the lock held) and returns the
// phase then.
func (s *offlineState) wait(ok func() bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !ok() {
		s.cond.Wait()
	}
	return s.phase
}

// offlineWork writes n events in clone o without any exchange: creates
// with long bodies, updates, local claims and completes.
func offlineWork(o *clone, n int, st *offlineState) error {
	body := strings.Repeat("offline work, described at length. ", 16)
	made := 0
	var open []string // claimed by o, not yet completed
	epochs := map[string]string{}
	for i := 0; i < n; i++ {
		var err error
		switch {
		case i%4 == 3 && len(open) > 0:
			id := open[0]
			open = open[1:]
			_, err = o.tryDo("complete", "--id", id, "--owner", "o", "--epoch", epochs[id])
		case i%4 == 2 && made > 0:
			id := fmt.Sprintf("O%03d", made-1)
			var call Call
			if call, err = o.tryDo("claim", "--id", id, "--owner", "o", "--ttl", "1h"); err == nil {
				out, perr := parseOut(call.Stdout)
				if perr != nil || out == nil {
					return fmt.Errorf("o: claim %s printed %q", id, call.Stdout)
				}
				open = append(open, id)
				epochs[id] = strconv.FormatInt(out.ClaimEpoch, 10)
			}
		case i%4 == 1 && made > 0:
			_, err = o.tryDo("update", fmt.Sprintf("O%03d", made-1), "--priority", strconv.Itoa(1+i%7))
		default:
			_, err = o.tryDo("create", "--id", fmt.Sprintf("O%03d", made), "--title", "offline "+strconv.Itoa(made), "--body", body)
			made++
		}
		if err != nil {
			return err
		}
		st.set(func() { st.written++ })
	}
	return nil
}

// TestGitSyncCarriesCompaction: a clone compacts, then bl sync --push
// rebases onto a remote that moved on. The compaction (archive segment and
// snapshot) reaches the remote and stays in the clone; the remote's
// ledger.jsonl does not grow with every event ever written.
func TestGitSyncCarriesCompaction(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "carry")
	a := w.seed("a", blSync, nil)
	a.do("create", "--id", "S0", "--title", "seeded")
	a.publishSeed()
	b := w.clone("b", blSync)
	for i := 0; i < 5; i++ {
		a.do("create", "--id", fmt.Sprintf("A%d", i), "--title", "to be compacted")
	}
	a.mustBL("compact")
	b.do("create", "--id", "B1", "--title", "pushed first")
	b.syncPush()
	a.syncPush()
	segs, _ := filepath.Glob(filepath.Join(a.dir, ".backlog", ledger.ArchiveDir, "*.jsonl"))
	out, _ := w.tryGit(w.remote, "ls-tree", "-r", "--name-only", "main", ".backlog/")
	if len(segs) == 0 || !strings.Contains(out, ".backlog/archive/") || !strings.Contains(out, ".backlog/snapshot.json") {
		t.Fatalf("bl sync --push drops the local compaction: after bl compact and a sync that rebases onto the remote, "+
			"the clone has %d archive segments and the remote's main holds:\n%s", len(segs), out)
	}
	w.finish(nil)
}

// restamped returns the first event id the clone's files hold on two
// lines that differ, with the two stamps, or "".
func restamped(c *clone) (id, first, second string) {
	c.w.t.Helper()
	seen := map[string]rawLine{}
	for _, l := range c.rawEvents() {
		p, ok := seen[l.e.ID]
		if ok && p.body != l.body {
			return l.e.ID, p.e.At.Format(time.RFC3339Nano), l.e.At.Format(time.RFC3339Nano)
		}
		seen[l.e.ID] = l
	}
	return "", "", ""
}

// TestGitSyncKeepsCommittedCompaction: a clone compacts and commits with
// plain git, and that commit also lands on another branch; then bl sync
// --push rebases onto a remote that moved on. A branch that forked from
// the earlier commit and compacts again must merge with plain git: if the
// sync commit deleted the snapshot the earlier commit added, git cannot
// merge that deletion with the branch's change to it, union rule or not.
func TestGitSyncKeepsCommittedCompaction(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "keep")
	a := w.seed("a", blSync, nil)
	a.do("create", "--id", "S0", "--title", "seeded")
	a.publishSeed()
	b := w.clone("b", blSync)
	c := w.clone("c", plainGit)

	a.do("create", "--id", "A1", "--title", "from a")
	a.do("claim", "--id", "S0", "--owner", "a", "--ttl", "1h")
	a.mustBL("compact")
	a.commit("a: A1, claim S0, compacted")
	a.git("push", "-q", "origin", "HEAD:refs/heads/pr")
	b.do("create", "--id", "B1", "--title", "from b")
	b.syncPush()
	a.syncPush()
	deleted := strings.TrimSpace(a.git("diff", "--name-only", "--diff-filter=D", "HEAD^1", "HEAD", "--", ".backlog"))

	c.git("fetch", "-q", "origin")
	c.git("checkout", "-q", "-b", "feature", "origin/pr")
	c.do("create", "--id", "C1", "--title", "on the branch")
	c.mustBL("compact")
	c.commit("c: C1, compacted")
	c.git("checkout", "-q", "main")
	c.pull()
	if out, err := c.tryGit("merge", "-q", "--no-edit", "feature"); err != nil {
		if deleted != "" && strings.Contains(out, "modify/delete") {
			t.Fatalf("bl sync --push, rebasing a clone whose committed compaction the remote lacks, commits the deletion of %s; "+
				"a branch from the earlier commit that compacts again then fails to merge with plain git: %s",
				strings.ReplaceAll(deleted, "\n", ", "), firstLineOf(out, "CONFLICT"))
		}
		t.Fatalf("c: git merge feature: %v\n%s%s", err, out, c.markers())
	}
	if deleted != "" {
		// A re-stamped segment is written under a new name; what the
		// merge keeps must still read as every event once.
		t.Logf("bl sync --push removed %s", strings.ReplaceAll(deleted, "\n", ", "))
	}
	c.healthy("after merging the branch that compacted again")
	c.push()
	w.finish(nil)
}

// firstLineOf returns the first line of s that contains sub.
func firstLineOf(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestGitSyncRestampedUnion: a clone commits events with plain git commit
// (or bl sync without --push, or compacted first), that commit also lands
// on another branch, then bl sync --push rebases the events onto the
// remote's and writes them with later stamps. Merging the other branch
// with plain git then holds one event id under two stamps: one event, the
// later stamp counting (ledger/doc.go), a valid backlog like any other
// union.
func TestGitSyncRestampedUnion(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"git commit", "bl sync", "bl compact and git commit"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "restamp")
			a := w.seed("a", blSync, nil)
			a.do("create", "--id", "S0", "--title", "seeded")
			a.publishSeed()
			b := w.clone("b", blSync)
			c := w.clone("c", plainGit)

			// a commits two events locally; the commit also goes to a
			// branch of its own (a pull request, say).
			a.do("create", "--id", "A1", "--title", "from a")
			cl := a.do("claim", "--id", "S0", "--owner", "a", "--ttl", "1h")
			switch how {
			case "git commit":
				a.commit("a: A1, claim S0")
			case "bl sync":
				a.mustBL("sync")
			default:
				// The first stamps go into an archive segment.
				a.mustBL("compact")
				a.commit("a: A1, claim S0, compacted")
			}
			a.git("push", "-q", "origin", "HEAD:refs/heads/pr")
			// b pushes first, so a's sync rebases (and re-stamps) them.
			b.do("create", "--id", "B1", "--title", "from b")
			b.syncPush()
			a.syncPush()
			a.do("complete", "--id", "S0", "--owner", "a", "--epoch", strconv.FormatInt(w.card(cl).ClaimEpoch, 10))
			a.syncPush()

			// c builds on the branch, then merges it into main.
			c.git("fetch", "-q", "origin")
			c.git("checkout", "-q", "-b", "feature", "origin/pr")
			c.do("create", "--id", "C1", "--title", "on the branch")
			c.commit("c: C1")
			c.git("checkout", "-q", "main")
			c.pull()
			if out, err := c.tryGit("merge", "-q", "--no-edit", "feature"); err != nil {
				t.Fatalf("c: git merge feature: %v\n%s", err, out)
			}
			if id, before, after := restamped(c); id != "" {
				t.Logf("the merge holds event %s at %s and at %s", id, before, after)
			} else {
				t.Logf("the merge holds no event under two stamps (bl sync no longer re-stamps?): the union is an ordinary one")
			}
			c.healthy("after merging the branch that holds the pre-sync commit")
			c.push()
			w.finish(nil)
		})
	}
}
