package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bl-backlog/bl/internal/browsertest"
	"github.com/bl-backlog/bl/internal/cli"
)

// laneOfState is the web board's lane for each state bl list --json prints.
var laneOfState = map[string]string{
	"ready": "claimable", "waiting": "waiting", "claimed": "claimed", "expired": "claimed",
	"review": "review", "blocked": "blocked", "done": "done",
}

// statesFixture makes a backlog with a card in every state, paths held by
// a card in review among them, and returns the states bl list --json
// prints, by card.
func statesFixture(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	bl := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := cli.Main(cli.Extensions{}, append([]string{"--dir", f.dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("bl %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	t.Setenv("BL_ACTOR", "tester")
	bl("create", "--id", "P1", "--title", "Rework the lexer", "--paths", "src/lexer/**")
	bl("create", "--id", "P2", "--title", "Lexer error messages", "--paths", "src/lexer/errors.go")
	bl("create", "--id", "R1", "--title", "Write the parser")
	bl("create", "--id", "W1", "--title", "Ship the parser", "--depends-on", "R1")
	bl("create", "--id", "B1", "--title", "Talk to legal")
	bl("create", "--id", "D1", "--title", "Set up CI")
	bl("create", "--id", "E1", "--title", "Flaky test")
	bl("create", "--id", "C1", "--title", "Docs")
	bl("claim", "--owner", "w1", "--id", "P1")
	bl("complete", "--id", "P1", "--owner", "w1", "--epoch", "1", "--review")
	bl("block", "--id", "B1", "--reason", "waiting for legal")
	bl("claim", "--owner", "w2", "--id", "D1")
	bl("complete", "--id", "D1", "--owner", "w2", "--epoch", "1")
	bl("claim", "--owner", "w3", "--id", "C1", "--ttl", "1h")
	bl("claim", "--owner", "w4", "--id", "E1", "--ttl", "1s")
	time.Sleep(1100 * time.Millisecond) // E1's lease runs out
	var cards []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(bl("list", "--json")), &cards); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, c := range cards {
		states[c.ID] = c.State
	}
	for id, want := range map[string]string{"P1": "review", "P2": "waiting", "W1": "waiting", "R1": "ready", "B1": "blocked", "D1": "done", "E1": "expired", "C1": "claimed"} {
		if states[id] != want {
			t.Fatalf("bl list --json: %s is %q, the fixture wants %q", id, states[id], want)
		}
	}
	return states
}

// TestAPICardsAgreeWithCLI: /api/cards, /api/cards/ID and /api/board give
// every card the state members bl list --json prints, with the same values.
func TestAPICardsAgreeWithCLI(t *testing.T) {
	f := newFixture(t, Options{})
	states := statesFixture(t, f)
	var list []map[string]any
	f.getJSON("/api/cards", &list)
	var board struct {
		Claimable []string         `json:"claimable"`
		Cards     []map[string]any `json:"cards"`
	}
	f.getJSON("/api/board", &board)
	if len(list) != len(states) || len(board.Cards) != len(states) {
		t.Fatalf("/api/cards has %d cards, /api/board %d, bl list %d", len(list), len(board.Cards), len(states))
	}
	for _, cards := range [][]map[string]any{list, board.Cards} {
		for _, c := range cards {
			id := c["id"].(string)
			if c["state"] != states[id] {
				t.Errorf("%s: state %v, bl list --json says %q", id, c["state"], states[id])
			}
			for _, k := range []string{"claimable", "waiting_on", "lease_expired"} {
				if _, ok := c[k]; !ok {
					t.Errorf("%s: no %q member", id, k)
				}
			}
		}
	}
	var p2 map[string]any
	f.getJSON("/api/cards/P2", &p2)
	if p2["state"] != "waiting" || p2["paths_held_by"] != "P1" || p2["claimable"] != false {
		t.Errorf("/api/cards/P2 = state %v, paths_held_by %v, claimable %v; want waiting, P1, false", p2["state"], p2["paths_held_by"], p2["claimable"])
	}
	for _, id := range board.Claimable {
		if states[id] != "ready" && states[id] != "expired" {
			t.Errorf("/api/board lists %s (%s) as claimable", id, states[id])
		}
	}
}

// TestBoardLanesAgreeWithCLI: in a real browser, every card sits in the
// lane of the state bl list --json prints — a card whose paths a card in
// review holds is waiting, not claimable. And the board draws from its
// first fetch on every cold load, stream or no stream.
func TestBoardLanesAgreeWithCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin := browsertest.Chromium(t)
	f := newFixture(t, Options{})
	states := statesFixture(t, f)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1500, 950), chromedp.Flag("headless", "new"),
	)
	const loads = 8
	for i := range loads {
		func() {
			// A new browser each time: a cold load, nothing cached.
			actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
			defer cancelA()
			ctx, cancelC := chromedp.NewContext(actx)
			defer cancelC()
			ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
			defer cancelT()
			var lanes map[string]string
			err := chromedp.Run(ctx,
				chromedp.Navigate(f.url+"/"),
				chromedp.Poll(`document.querySelectorAll("#lanes .card").length > 0`, nil, chromedp.WithPollingTimeout(20*time.Second)),
				chromedp.Evaluate(`Object.fromEntries(Array.from(document.querySelectorAll("#lanes .card")).map(e => [e.dataset.id, e.dataset.lane]))`, &lanes),
			)
			if err != nil {
				var conn string
				_ = chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("conn").textContent + " / " + document.getElementById("counts").textContent`, &conn))
				t.Fatalf("cold load %d: the board did not draw (%s): %v", i+1, conn, err)
			}
			for id, st := range states {
				if lanes[id] != laneOfState[st] {
					t.Errorf("load %d: %s in lane %q; bl list --json says %s, lane %q", i+1, id, lanes[id], st, laneOfState[st])
				}
			}
		}()
	}
}

// getJSON decodes the answer to GET path.
func (f *fixture) getJSON(path string, v any) {
	f.t.Helper()
	resp, body := f.get(path)
	if resp.StatusCode != 200 {
		f.t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		f.t.Fatalf("GET %s: %v", path, err)
	}
}
