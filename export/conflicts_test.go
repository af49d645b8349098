package export

import (
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// TestBoardConflicts: a card's conflicts show under it on the markdown and
// html boards, with the loser, the winner, the time and the reason, user
// text escaped; a card without conflicts shows none, and a board without
// any is the board it was before.
func TestBoardConflicts(t *testing.T) {
	cards := []ledger.Card{
		{ID: "A", Title: "contested", Status: ledger.StatusClaimed, ClaimOwner: "w1", ClaimEpoch: 1},
		{ID: "B", Title: "quiet", Status: ledger.StatusReady},
	}
	conflicts := []ledger.Conflict{
		{Event: "e1", At: "2026-01-02T03:04:05Z", Op: ledger.OpClaim, Card: "A", Actor: "host2", Owner: "w`2<b>", Winner: "w1", Reason: "card A is claimed by w1"},
		{Event: "e2", At: "2026-01-02T03:04:06Z", Clock: "2026-01-02T03:04:01Z", Op: ledger.OpHeartbeat, Card: "A", Actor: "host3", Reason: "fenced"},
	}
	md := string(RenderMarkdown(cards, Options{Conflicts: conflicts}))
	for _, want := range []string{
		"- **2 conflicts** (events the fold refused):\n",
		"  - claim by ``w`2<b>`` lost to `w1`, 2026-01-02T03:04:05Z: card A is claimed by w1\n",
		"  - heartbeat by `host3`, 2026-01-02T03:04:01Z: fenced\n", // the writer's clock, not the stamp
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "conflict") != 1 {
		t.Errorf("conflicts shown other than under A:\n%s", md)
	}
	if got, want := RenderMarkdown(cards, Options{}), RenderMarkdown(cards, Options{Conflicts: []ledger.Conflict{}}); string(got) != string(want) {
		t.Error("an empty conflict list changed the board")
	}
	html := string(RenderHTML(cards, Options{Conflicts: conflicts}))
	if !strings.Contains(html, "claim by <b>w`2&lt;b&gt;</b> lost to <b>w1</b>") {
		t.Errorf("html lacks the escaped conflict:\n%s", html)
	}
}
