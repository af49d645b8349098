package export

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

var (
	t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	// testNow is the "as of" time of the html fixtures.
	testNow = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
)

func at(min int) *time.Time {
	t := t0.Add(time.Duration(min) * time.Minute)
	return &t
}

func intp(v int) *int { return &v }

// card fills the fields every card has.
func card(id, title string, st ledger.Status, prio int, created int) ledger.Card {
	return ledger.Card{
		ID: id, Title: title, Status: st, Priority: prio,
		Labels: []string{}, DependsOn: []string{}, Acceptance: []string{},
		CreatedAt: *at(created), UpdatedAt: *at(created + 1), Version: 1,
	}
}

// richCards is a small backlog that exercises every renderer: all four
// lanes, several phases (M2 before M10, one with unicode, cards without a
// phase), unicode, "|", quotes, HTML, Markdown punctuation and newlines in
// titles, a long body, a dependency outside the set, a card id with dots
// and dashes, a live and an expired lease.
func richCards() []ledger.Card {
	var cs []ledger.Card

	c := card("A1", "Schema for cards & events", ledger.StatusDone, 5, 0)
	c.Phase = "M1"
	c.Labels = []string{"db"}
	c.Acceptance = []string{"migrations apply cleanly", "rollback tested"}
	c.Attempts = 1
	c.ClaimEpoch = 1
	c.ClosedAt = at(50)
	c.CloseNote = "merged in abc123"
	c.Version = 4
	cs = append(cs, c)

	c = card("A2", "Service | API layer", ledger.StatusClaimed, 9, 1)
	c.Phase = "M1"
	c.DependsOn = []string{"A1"}
	c.Labels = []string{"api", "needs review"}
	c.Acceptance = []string{`returns 200 for "GET /cards"`, "p99 < 50ms | under load"}
	c.ClaimOwner = "worker-1"
	c.ClaimEpoch = 3
	c.ClaimedAt = at(55)
	c.ClaimTTLSeconds = 1800
	c.LeaseExpiresAt = at(85)
	c.LastHeartbeatAt = at(60)
	c.Attempts = 2
	c.MaxAttempts = 5
	c.Progress = intp(40)
	c.Checkpoint = json.RawMessage(`{"step":"handlers","done":["list","show"]}`)
	c.Version = 7
	cs = append(cs, c)

	c = card("A3", "Title with\nnewline and *stars*, `code` and [brackets](x)", ledger.StatusReady, 3, 2)
	c.Phase = "M1"
	c.DependsOn = []string{"A2"}
	var body strings.Builder
	body.WriteString("Why: the board must stay readable.\n\n```go\nfmt.Println(\"</details>\")\n```\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&body, "line %02d of a long description with <html> & | pipes\n", i)
	}
	c.Body = body.String()
	cs = append(cs, c)

	c = card("B1", "Ünïcödé — 日本語のタイトル 🚀", ledger.StatusReady, 7, 3)
	c.Phase = "M2 — Ärger"
	c.DependsOn = []string{"A1"}
	c.Labels = []string{"i18n", "ünïcödé"}
	c.Acceptance = []string{"renders in 日本語", "emoji 🚀 survive"}
	cs = append(cs, c)

	c = card("B2", `Quote "this" <script>alert(1)</script> & #hash; semi`, ledger.StatusBlocked, 1, 4)
	c.Phase = "M2 — Ärger"
	c.DependsOn = []string{"B1", "A2"}
	c.BlockedReason = "waiting for the vendor's API key | ticket #42\nsecond line"
	c.DeferUntil = at(24 * 60)
	c.Attempts = 3
	c.MaxAttempts = 3
	cs = append(cs, c)

	c = card("C1", "A card without a phase", ledger.StatusReady, 0, 5)
	c.Labels = []string{"`weird`label", "ops"}
	c.Parent = "A2"
	c.Body = "Short body."
	cs = append(cs, c)

	c = card("C2", "Depends on a card outside this export", ledger.StatusReady, 2, 6)
	c.Phase = "M10"
	c.DependsOn = []string{"Z9"}
	cs = append(cs, c)

	c = card("D1", "=SUM(A1:A9) looks like a formula", ledger.StatusDone, -2, 7)
	c.Phase = "M2 — Ärger"
	c.ClosedAt = at(30)
	c.CloseNote = "-not a formula either"
	cs = append(cs, c)

	c = card("x.y-z_1", "Dotted, dashed and underscored id", ledger.StatusReady, 4, 8)
	c.Phase = "M2 — Ärger"
	c.DependsOn = []string{"B1", "C2"}
	cs = append(cs, c)

	c = card("E1", "Lease ran out while the agent was paused", ledger.StatusClaimed, 6, 9)
	c.Phase = "M10"
	c.DependsOn = []string{"A1"}
	c.ClaimOwner = "agent-7"
	c.ClaimEpoch = 1
	c.ClaimedAt = at(10)
	c.ClaimTTLSeconds = 600
	c.LeaseExpiresAt = at(20)
	c.Attempts = 1
	cs = append(cs, c)
	return cs
}

// sparseCards has ready and done cards only, so two lanes are empty.
func sparseCards() []ledger.Card {
	a := card("S1", "first", ledger.StatusDone, 1, 0)
	a.ClosedAt = at(5)
	b := card("S2", "second", ledger.StatusReady, 1, 1)
	b.DependsOn = []string{"S1"}
	return []ledger.Card{b, a}
}

// bigCards is a deterministic backlog of n cards: five phases, every
// status, dependencies on earlier cards only (a DAG), long-ish titles.
func bigCards(n int) []ledger.Card {
	r := rand.New(rand.NewPCG(1, 2))
	statuses := []ledger.Status{ledger.StatusReady, ledger.StatusReady, ledger.StatusClaimed, ledger.StatusBlocked, ledger.StatusDone, ledger.StatusDone}
	words := []string{"parser", "ledger", "lease", "board", "sync", "watch", "cache", "index", "retry", "fence", "|", "ünï", "日本", "quote\"d"}
	cs := make([]ledger.Card, 0, n)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("T%04d", i+1)
		var title []string
		for range 3 + r.IntN(6) {
			title = append(title, words[r.IntN(len(words))])
		}
		c := card(id, strings.Join(title, " "), statuses[r.IntN(len(statuses))], r.IntN(20)-5, i)
		c.Phase = fmt.Sprintf("M%d", 1+r.IntN(5))
		if i > 0 {
			for range r.IntN(3) {
				c.DependsOn = append(c.DependsOn, fmt.Sprintf("T%04d", 1+r.IntN(i)))
			}
		}
		if r.IntN(4) == 0 {
			c.Labels = []string{"l" + fmt.Sprint(r.IntN(7))}
		}
		if r.IntN(3) == 0 {
			c.Acceptance = []string{"criterion " + fmt.Sprint(i)}
		}
		switch c.Status {
		case ledger.StatusClaimed:
			c.ClaimOwner = fmt.Sprintf("agent-%d", r.IntN(64))
			c.ClaimEpoch = int64(1 + r.IntN(4))
			c.LeaseExpiresAt = at(i + 15)
		case ledger.StatusBlocked:
			c.BlockedReason = "blocked " + fmt.Sprint(i)
		case ledger.StatusDone:
			c.ClosedAt = at(i + 30)
		}
		cs = append(cs, c)
	}
	return cs
}
