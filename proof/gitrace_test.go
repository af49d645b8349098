package proof

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gitRace is the size of TestGitRemoteClaimRace.
type gitRace struct {
	Clones     int // clones racing through the remote
	Procs      int // claimer processes per clone
	Cards      int // cards the seed creates
	PlainCards int // cards the plain-git user creates while they race
}

func gitRaceSize() gitRace {
	if stress() {
		return gitRace{Clones: 8, Procs: 4, Cards: 150, PlainCards: 30}
	}
	return gitRace{Clones: 4, Procs: 2, Cards: 12, PlainCards: 3}
}

// progress is what the racers and the plain-git user wait on: how many
// cards are completed, how many times the plain-git user pushed, and
// whether it is done.
type progress struct {
	mu         sync.Mutex
	cond       *sync.Cond
	completed  int
	pushes     int
	plainDone  bool
	plainTries int // git push attempts by the plain-git user
	abort      bool
}

func (p *progress) aborted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.abort
}

func newProgress() *progress {
	p := &progress{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *progress) update(f func()) {
	p.mu.Lock()
	f()
	p.mu.Unlock()
	p.cond.Broadcast()
}

// waitFor blocks until ok holds (called with the lock held) or the run
// is aborted; it reports whether ok holds.
func (p *progress) waitFor(ok func() bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !ok() && !p.abort {
		p.cond.Wait()
	}
	return ok()
}

// TestGitRemoteClaimRace: 4 clones × 2 processes (8 × 4 under BL_STRESS)
// race bl claim --remote,
// then bl complete --remote, over one set of cards in a backlog whose
// config.json sets claims.remote (half the processes name the remote, half
// rely on the setting), while a plain-git user (bl create, git add,
// commit, pull with a merge or a rebase, push; never bl sync) keeps
// pushing new cards. The checker judges what each process was told: no
// card won twice, every completion acknowledged to the owner and epoch of
// the card's acknowledged claim, and the converged backlog saying the
// same.
func TestGitRemoteClaimRace(t *testing.T) {
	t.Parallel()
	size := gitRaceSize()
	w := newWorld(t, "race")
	seed := w.seed("seed", blSync, func(cfg map[string]any) {
		cfg["claims"] = map[string]any{"remote": "origin"}
	})
	var cards []string
	for i := 0; i < size.Cards; i++ {
		id := fmt.Sprintf("R%03d", i)
		seed.do("create", "--id", id, "--title", "raced for", "--priority", strconv.Itoa(i%3))
		cards = append(cards, id)
	}
	seed.publishSeed()
	var racers []*clone
	for i := 0; i < size.Clones; i++ {
		racers = append(racers, w.clone(string(rune('p'+i)), blSync))
	}
	g := w.clone("g", plainGit)
	for i := 0; i < size.PlainCards; i++ {
		cards = append(cards, fmt.Sprintf("G%03d", i))
	}
	total := len(cards)

	prog := newProgress()
	var mu sync.Mutex
	var raceCalls []Call
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
		prog.update(func() { prog.abort = true })
	}
	// attempt runs one request, again with the same request id while bl
	// says every round was rejected (exit 1, code remote) or the backlog
	// lock stayed busy (exit 5): the answer that counts is the last.
	attempt := func(c *clone, worker string, args []string) Call {
		var call Call
		for i := 0; i < 10; i++ {
			call = c.bl(worker, args...)
			mu.Lock()
			raceCalls = append(raceCalls, call)
			mu.Unlock()
			retry := (call.Exit == 1 && call.ErrorCode() == "remote") || (call.Exit == 5 && call.ErrorCode() == "lock_timeout")
			if !retry {
				break
			}
		}
		return call
	}
	racer := func(c *clone, k int) {
		owner := fmt.Sprintf("%s%d", c.name, k)
		var via []string
		if k%2 == 0 {
			via = []string{"--remote", "origin"}
		}
		for {
			prog.mu.Lock()
			pushes, plainDone, abort := prog.pushes, prog.plainDone, prog.abort
			prog.mu.Unlock()
			if abort {
				return
			}
			claim := append([]string{"claim", "--owner", owner, "--ttl", "1h", "--json", "--request-id", w.rids.next(owner)}, via...)
			call := attempt(c, owner, claim)
			if call.Exit != 0 {
				fail("%s: bl %s: exit %d: %s", owner, strings.Join(claim, " "), call.Exit, bytes.TrimSpace(call.Stderr))
				return
			}
			out, err := parseOut(call.Stdout)
			if err != nil {
				fail("%s: claim printed %q: %v", owner, call.Stdout, err)
				return
			}
			if out == nil {
				if plainDone {
					return // nothing left once every card was pushed
				}
				// Wait for the plain-git user's next push.
				prog.waitFor(func() bool { return prog.pushes > pushes || prog.plainDone })
				continue
			}
			complete := append([]string{"complete", "--id", out.ID, "--owner", owner, "--epoch", strconv.FormatInt(out.ClaimEpoch, 10),
				"--json", "--request-id", w.rids.next(owner)}, via...)
			call = attempt(c, owner, complete)
			if call.Exit != 0 {
				fail("%s: bl %s: exit %d: %s", owner, strings.Join(complete, " "), call.Exit, bytes.TrimSpace(call.Stderr))
				return
			}
			prog.update(func() { prog.completed++ })
		}
	}
	plain := func() {
		defer prog.update(func() { prog.plainDone = true })
		for i := 0; i < size.PlainCards; i++ {
			// Spread the pushes over the race: the i-th waits until a
			// share of the cards is done.
			if !prog.waitFor(func() bool { return prog.completed >= i*size.Cards/(size.PlainCards+1) }) {
				return
			}
			id := fmt.Sprintf("G%03d", i)
			if _, err := g.tryDo("create", "--id", id, "--title", "pushed with plain git", "--priority", "3"); err != nil {
				fail("%v", err)
				return
			}
			for _, args := range [][]string{{"add", "-A", ".backlog"}, {"commit", "-q", "-m", "g: " + id}} {
				if out, err := g.tryGit(args...); err != nil {
					fail("g: git %s: %v\n%s", strings.Join(args, " "), err, out)
					return
				}
			}
			for k := 0; ; k++ {
				// Every other card is pulled with a rebase.
				how := []string{"--no-rebase", "--rebase"}[i%2]
				if out, err := g.tryGit("pull", "-q", how, "origin", "main"); err != nil {
					fail("g: git pull %s: %v\n%s%s", how, err, out, g.markers())
					return
				}
				if m := g.markers(); m != "" {
					fail("g: conflict markers after git pull:\n%s", m)
					return
				}
				out, err := g.tryGit("push", "-q", "origin", "HEAD:main")
				prog.update(func() { prog.plainTries++ })
				if err == nil {
					break
				}
				// Twelve racers push all the time: a plain git pull and
				// push can lose many rounds in a row before it lands.
				if k == 1000 || !rejected(out) || prog.aborted() {
					fail("g: git push, attempt %d: %v\n%s", k+1, err, out)
					return
				}
			}
			prog.update(func() { prog.pushes++ })
		}
	}

	deadline := patience(t)
	timer := time.AfterFunc(deadline, func() { fail("the race did not finish within %s", deadline) })
	defer timer.Stop()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); plain() }()
	for _, c := range racers {
		for k := 1; k <= size.Procs; k++ {
			wg.Add(1)
			go func() { defer wg.Done(); racer(c, k) }()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, f := range failures {
		t.Error(f)
	}

	vs := w.finish(nil)
	var final []outCard
	if err := json.Unmarshal(vs[0].export, &final); err != nil {
		t.Fatalf("export: %v", err)
	}
	rep := checkRemoteRace(raceCalls, vs[0].events, final, cards, len(failures) == 0)
	for _, v := range rep.violations {
		t.Errorf("violation: %s", v)
	}
	t.Logf("remote race: %d clones x %d processes, %d cards (%d from plain git, pushed %d times in %d git push attempts), %d claims and %d completes acknowledged, %d refused claims in the ledger, %d retried rounds, %d bl calls in %s",
		size.Clones, size.Procs, total, size.PlainCards, prog.pushes, prog.plainTries, rep.claims, rep.completes, rep.refused, rep.retried, len(raceCalls), elapsed.Round(time.Millisecond))
	if !t.Failed() && rep.completes != total {
		t.Errorf("%d of %d cards completed", rep.completes, total)
	}
	// A lost race changes nothing on either side: the claim that lost its
	// card's lease ref was never written, so no refused event is left.
	if rep.refused != 0 {
		t.Errorf("%d refused claims or completes in the converged ledger; a lost race must leave none", rep.refused)
	}
}

// raceReport is what checkRemoteRace found.
type raceReport struct {
	violations                          []string
	claims, completes, refused, retried int
}

// checkRemoteRace judges a remote claim race from what each process was
// told and from the converged backlog (its log and its export). In this
// workload no lease ends but by its owner's complete (TTL an hour, no
// release), so a card is won once: two acknowledged claims of one card are
// a double win, whatever their epochs.
func checkRemoteRace(calls []Call, log []logEvent, final []outCard, cards []string, finished bool) raceReport {
	var r raceReport
	add := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }

	// The answer that counts for each request: its last attempt.
	last := map[string]*Call{}
	for i := range calls {
		c := &calls[i]
		if p, ok := last[c.RequestID]; ok {
			r.retried++
			if p.Exit == 0 && c.Exit == 0 && !bytes.Equal(p.Stdout, c.Stdout) {
				add("request %s was answered twice, differently: %s and %s", c.RequestID, bytes.TrimSpace(p.Stdout), bytes.TrimSpace(c.Stdout))
			}
		}
		last[c.RequestID] = c
	}
	type claim struct {
		owner string
		epoch int64
		rid   string
		end   time.Time
	}
	won := map[string][]claim{}
	var completes []*Call
	for _, rid := range sortedKeys(last) {
		c := last[rid]
		if c.Exit != 0 {
			add("%s %s (request %s) ended with exit %d: %s", c.Worker, strings.Join(c.Args, " "), rid, c.Exit, bytes.TrimSpace(c.Stderr))
			continue
		}
		out, err := parseOut(c.Stdout)
		if err != nil {
			add("%s (request %s) printed %q: %v", c.Op, rid, c.Stdout, err)
			continue
		}
		switch {
		case c.Op == "claim" && out != nil:
			if out.ClaimOwner != c.Owner || out.Status != "claimed" {
				add("claim by %s (request %s) printed %s %s held by %s", c.Owner, rid, out.ID, out.Status, out.ClaimOwner)
			}
			won[out.ID] = append(won[out.ID], claim{c.Owner, out.ClaimEpoch, rid, c.End})
			r.claims++
		case c.Op == "complete":
			if out == nil || out.ID != c.Card || out.Status != "done" {
				add("complete %s by %s (request %s) printed %q", c.Card, c.Owner, rid, bytes.TrimSpace(c.Stdout))
			}
			completes = append(completes, c)
			r.completes++
		}
	}
	for _, id := range sortedKeys(won) {
		ws := won[id]
		if len(ws) < 2 {
			continue
		}
		var who []string
		same := map[int64]int{}
		for _, w := range ws {
			who = append(who, fmt.Sprintf("%s epoch %d (request %s, acknowledged %s)", w.owner, w.epoch, w.rid, w.end.Format("15:04:05.000")))
			same[w.epoch]++
		}
		what := "won twice"
		for _, n := range same {
			if n > 1 {
				what = "won twice at one epoch"
			}
		}
		add("card %s %s: %s", id, what, strings.Join(who, " and "))
	}
	done := map[string]*Call{}
	for _, c := range completes {
		ws := won[c.Card]
		switch {
		case len(ws) == 0:
			add("complete of %s by %s epoch %d (request %s) was acknowledged, but no claim of %s was", c.Card, c.Owner, c.Epoch, c.RequestID, c.Card)
		case ws[0].owner != c.Owner || ws[0].epoch != c.Epoch:
			add("complete of %s by %s epoch %d (request %s) was acknowledged, but the acknowledged claim is %s's at epoch %d", c.Card, c.Owner, c.Epoch, c.RequestID, ws[0].owner, ws[0].epoch)
		}
		if p := done[c.Card]; p != nil {
			add("card %s completed twice: requests %s and %s", c.Card, p.RequestID, c.RequestID)
		}
		done[c.Card] = c
	}

	// The converged backlog: per card one applied claim and one applied
	// complete, the acknowledged ones; refused events only for requests
	// that were not acknowledged as that card.
	type applied struct{ claims, completes []logEvent }
	byCard := map[string]*applied{}
	for _, e := range log {
		if e.Op != "claim" && e.Op != "complete" {
			continue
		}
		if len(e.Conflict) > 0 {
			r.refused++
			if c := last[baseRequest(e.RequestID)]; c != nil && c.Exit == 0 {
				if out, _ := parseOut(c.Stdout); out != nil && out.ID == e.Card {
					add("%s of %s by %s epoch %d (request %s) was acknowledged, but the converged backlog refuses it: %s",
						e.Op, e.Card, e.Owner, e.Epoch, e.RequestID, e.Conflict)
				}
			}
			continue
		}
		a := byCard[e.Card]
		if a == nil {
			a = &applied{}
			byCard[e.Card] = a
		}
		if e.Op == "claim" {
			a.claims = append(a.claims, e)
		} else {
			a.completes = append(a.completes, e)
		}
	}
	state := map[string]outCard{}
	for _, c := range final {
		state[c.ID] = c
	}
	for _, id := range cards {
		ws, a := won[id], byCard[id]
		if !finished && len(ws) == 0 {
			continue // the run stopped before anyone claimed it
		}
		if a == nil {
			a = &applied{}
		}
		if len(ws) == 0 {
			add("card %s: no claim was acknowledged", id)
		} else if len(a.claims) != 1 || a.claims[0].Owner != ws[0].owner || a.claims[0].Epoch != ws[0].epoch || baseRequest(a.claims[0].RequestID) != ws[0].rid {
			add("card %s: the converged backlog applies claims %s, want only %s epoch %d (request %s)", id, describeEvents(a.claims), ws[0].owner, ws[0].epoch, ws[0].rid)
		}
		c := done[id]
		if c == nil && !finished {
			continue
		}
		if c == nil {
			add("card %s: no complete was acknowledged", id)
		} else if len(a.completes) != 1 || baseRequest(a.completes[0].RequestID) != c.RequestID {
			add("card %s: the converged backlog applies completes %s, want only request %s", id, describeEvents(a.completes), c.RequestID)
		}
		if s, ok := state[id]; !ok || s.Status != "done" {
			add("card %s ends %q in the converged export, want done", id, s.Status)
		}
	}
	sort.Strings(r.violations)
	return r
}

func describeEvents(es []logEvent) string {
	if len(es) == 0 {
		return "none"
	}
	var s []string
	for _, e := range es {
		s = append(s, fmt.Sprintf("%s epoch %d (request %s)", e.Owner, e.Epoch, e.RequestID))
	}
	return strings.Join(s, ", ")
}

// TestGitRaceCheckerCatches is checkRemoteRace's negative control: a
// history where two processes were told they won one card, a complete was
// acknowledged to the losing owner and the converged backlog kept another
// claim must be reported, each broken promise by name.
func TestGitRaceCheckerCatches(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := func(worker, rid string, end time.Duration, exit int, stdout string, args ...string) Call {
		c := Call{Worker: worker, Args: append(args, "--request-id", rid), Exit: exit, Stdout: []byte(stdout), Start: t0, End: t0.Add(end)}
		describe(&c)
		return c
	}
	claimed := func(id, owner string, epoch int) string {
		return fmt.Sprintf(`{"id":%q,"status":"claimed","claim_owner":%q,"claim_epoch":%d}`, id, owner, epoch)
	}
	done := func(id string) string { return fmt.Sprintf(`{"id":%q,"status":"done"}`, id) }
	good := []Call{
		call("p1", "c1", 1, 0, claimed("A", "p1", 1), "claim", "--owner", "p1"),
		call("p1", "d1", 2, 0, done("A"), "complete", "--id", "A", "--owner", "p1", "--epoch", "1"),
	}
	goodLog := []logEvent{
		{ID: "e1", Op: "claim", Card: "A", Owner: "p1", Epoch: 1, RequestID: "c1"},
		{ID: "e2", Op: "complete", Card: "A", Owner: "p1", Epoch: 1, RequestID: "d1"},
	}
	final := []outCard{{ID: "A", Status: "done"}}
	if r := checkRemoteRace(good, goodLog, final, []string{"A"}, true); len(r.violations) != 0 {
		t.Fatalf("a clean history is reported: %v", r.violations)
	}

	bad := append(good[:2:2],
		call("q1", "c2", 3, 0, claimed("A", "q1", 1), "claim", "--owner", "q1"),
		call("q1", "d2", 4, 0, done("A"), "complete", "--id", "A", "--owner", "q1", "--epoch", "1"),
	)
	badLog := append(goodLog[:1:1],
		logEvent{ID: "e3", Op: "claim", Card: "A", Owner: "q1", Epoch: 1, RequestID: "c2", Conflict: json.RawMessage(`{"reason":"stale"}`)},
		logEvent{ID: "e2", Op: "complete", Card: "A", Owner: "p1", Epoch: 1, RequestID: "d1"},
	)
	r := checkRemoteRace(bad, badLog, final, []string{"A"}, true)
	for _, want := range []string{
		"card A won twice at one epoch",
		"card A completed twice",
		"complete of A by q1 epoch 1 (request d2) was acknowledged, but the acknowledged claim is p1's",
		"claim of A by q1 epoch 1 (request c2) was acknowledged, but the converged backlog refuses it",
	} {
		found := false
		for _, v := range r.violations {
			found = found || strings.Contains(v, want)
		}
		if !found {
			t.Errorf("the checker missed %q; it reported:\n%s", want, strings.Join(r.violations, "\n"))
		}
	}
}
