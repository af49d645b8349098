package proof

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// verdictAck is a verdict bl acknowledged (exit 0): the request id it
// carried and what it was.
type verdictAck struct {
	Card, Op, RequestID string
}

// reviewReport is what checkReviews finds in a ledger.
type reviewReport struct {
	Verdicts      int      // verdict events the fold applied
	SelfApprovals []string // applied verdicts by the submitter's actor or owner
	LostVerdicts  []string // acknowledged verdicts not applied in the ledger
}

// checkReviews judges a ledger's review events: every verdict the fold
// applied came from neither identity (actor, owner) of the review event
// before it, and every acknowledged verdict is in the ledger, applied.
// It reads the events as they stand in the file and takes the fold's
// refusals (conflicts) from doctor, so a rule the fold forgot shows.
func checkReviews(lines []LedgerLine, refused map[string]bool, acks []verdictAck) reviewReport {
	var r reviewReport
	type who struct{ actor, owner string }
	submitter := map[string]who{}
	applied := map[string]*ledger.Event{} // request id -> applied verdict
	for _, l := range lines {
		e := l.Event
		if e == nil || refused[e.ID] {
			continue
		}
		switch e.Op {
		case ledger.OpReview:
			submitter[e.Card] = who{e.Actor, e.Owner}
		case ledger.OpApprove, ledger.OpReject:
			r.Verdicts++
			s := submitter[e.Card]
			is := func(x string) bool { return x != "" && (x == s.actor || x == s.owner) }
			if !e.Force && (is(e.Actor) || is(e.Owner)) {
				r.SelfApprovals = append(r.SelfApprovals, fmt.Sprintf("%s of %s by %s/%s, sent to review by %s/%s", e.Op, e.Card, e.Actor, e.Owner, s.actor, s.owner))
			}
			if e.RequestID != "" {
				applied[e.RequestID] = e
			}
		}
	}
	for _, a := range acks {
		if e := applied[a.RequestID]; e == nil || string(e.Op) != a.Op || e.Card != a.Card {
			r.LostVerdicts = append(r.LostVerdicts, fmt.Sprintf("%s of %s (request %s)", a.Op, a.Card, a.RequestID))
		}
	}
	return r
}

// TestCheckReviewsFindsSelfApproval: the checker itself sees a verdict by
// the submitter and an acknowledged verdict missing from the ledger.
func TestCheckReviewsFindsSelfApproval(t *testing.T) {
	ev := func(id string, op ledger.Op, actor, owner, rid string) LedgerLine {
		return LedgerLine{Event: &ledger.Event{ID: id, Op: op, Card: "A", Actor: actor, Owner: owner, RequestID: rid}}
	}
	lines := []LedgerLine{ev("1", ledger.OpReview, "worker", "w1", ""), ev("2", ledger.OpApprove, "worker", "", "r1"),
		ev("3", ledger.OpApprove, "carol", "w1", "r2"), ev("4", ledger.OpApprove, "carol", "", "r3")}
	r := checkReviews(lines, map[string]bool{"4": true}, []verdictAck{{"A", "approve", "r3"}})
	if len(r.SelfApprovals) != 2 || len(r.LostVerdicts) != 1 {
		t.Fatalf("%+v", r)
	}
}

// TestReviewUnderKills: cards go through the review gate — claim,
// complete --review, a verdict by another actor (now and then a reject and
// a second round) — while bl processes are killed with SIGKILL at random
// points and retried with their request ids; the worker also tries to
// approve its own card, by its actor and by its owner, every round. At the
// end: 0 self-approvals in the ledger, every self-approval attempt refused
// with self_review, 0 acknowledged verdicts lost, every card done.
func TestReviewUnderKills(t *testing.T) {
	cards := 6
	if stress() {
		cards = 60
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 32))
	r := newBacklog(t, blBinary(t, tagsNone))
	for i := range cards {
		mustRun(t, r, "create", "--id", fmt.Sprintf("R%d", i), "--title", "reviewed work")
	}
	kills := 0
	fault := func() runOpts {
		if rng.IntN(2) == 0 {
			return runOpts{}
		}
		return runOpts{fault: killFault, delay: time.Duration(rng.IntN(4000)) * time.Microsecond}
	}
	// until runs a call with a request id until bl acknowledges it.
	until := func(worker string, args ...string) Call {
		t.Helper()
		for try := 0; ; try++ {
			o := fault()
			if try > 20 {
				o = runOpts{}
			}
			c := r.run(worker, o, args...)
			if c.Killed() {
				kills++
				continue
			}
			if c.Exit != 0 {
				t.Fatalf("bl %v: exit %d: %s", args, c.Exit, c.Stderr)
			}
			return c
		}
	}
	var acks []verdictAck
	for i := range cards {
		id := fmt.Sprintf("R%d", i)
		for round := 0; ; round++ {
			c := until("worker", "claim", "--id", id, "--owner", "w1", "--ttl", "10m", "--actor", "worker", "--json", "--request-id", fmt.Sprintf("claim-%s-%d", id, round))
			var card struct {
				Epoch int64 `json:"claim_epoch"`
			}
			if err := json.Unmarshal(c.Stdout, &card); err != nil || card.Epoch == 0 {
				t.Fatalf("claim %s: %v %s", id, err, c.Stdout)
			}
			epoch := fmt.Sprint(card.Epoch)
			until("worker", "complete", "--id", id, "--owner", "w1", "--epoch", epoch, "--review", "--actor", "worker", "--request-id", fmt.Sprintf("submit-%s-%d", id, round))
			for _, self := range [][]string{
				{"approve", id, "--actor", "worker", "--json"},
				{"approve", id, "--actor", "reviewer", "--owner", "w1", "--epoch", epoch, "--json"},
				{"reject", id, "--actor", "reviewer", "--owner", "w1", "--epoch", epoch, "--reason", "mine", "--json"},
			} {
				c := r.run("worker", runOpts{}, self...)
				var e struct {
					Code string `json:"code"`
				}
				_ = json.Unmarshal(c.Stderr, &e)
				if c.Exit != 4 || e.Code != "self_review" {
					t.Fatalf("self-review %v: exit %d: %s%s", self, c.Exit, c.Stdout, c.Stderr)
				}
			}
			rid := fmt.Sprintf("verdict-%s-%d", id, round)
			if round == 0 && rng.IntN(3) == 0 {
				until("reviewer", "reject", id, "--actor", "reviewer", "--reason", "needs a test", "--request-id", rid)
				acks = append(acks, verdictAck{id, "reject", rid})
				continue
			}
			until("reviewer", "approve", id, "--actor", "reviewer", "--note", "lgtm", "--request-id", rid)
			acks = append(acks, verdictAck{id, "approve", rid})
			break
		}
	}
	data, err := os.ReadFile(filepath.Join(r.dir, ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	good, damaged, _ := ParseLedger(data)
	if len(damaged) > 0 {
		t.Fatalf("damaged lines: %+v", damaged)
	}
	rep, err := ledger.Diagnose(r.dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	for _, c := range rep.Conflicts {
		refused[c.Event] = true
	}
	got := checkReviews(good, refused, acks)
	t.Logf("%d cards, %d verdicts applied, %d processes killed", cards, got.Verdicts, kills)
	if len(got.SelfApprovals) > 0 || len(got.LostVerdicts) > 0 || len(rep.SelfApprovals) > 0 {
		t.Fatalf("self-approvals %v, lost verdicts %v, doctor lists %v", got.SelfApprovals, got.LostVerdicts, rep.SelfApprovals)
	}
	b, err := ledger.Open(r.dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cards {
		c, err := b.Get(fmt.Sprintf("R%d", i))
		if err != nil || c.Status != ledger.StatusDone || c.ClosedBy != "reviewer" {
			t.Fatalf("R%d at the end: %+v %v", i, c, err)
		}
	}
}
