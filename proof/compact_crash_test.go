package proof

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// compactKills are the ways TestCrashCompaction stops a compactor: at each
// step of the compaction protocol (BL_FAILPOINT) and by SIGKILL from outside
// at a random moment.
var compactKills = []string{"compact-after-archive", "compact-mid-snapshot", "compact-after-snapshot", "compact-after-truncate", "sigkill"}

// TestCrashCompaction kills bl compact at every step, again and again, with
// acknowledged writes in between. After every kill the backlog must open,
// bl doctor must find it intact, every acknowledged event must be in the
// history (archives and ledger) exactly once, and the cards must be what
// the acknowledged writes made.
func TestCrashCompaction(t *testing.T) {
	bin := blBinary(t, tagsFailpoints)
	r := newBacklog(t, bin)
	n := 40 // 8 of each kill
	if stress() {
		n = 400
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var acked []string
	killed := map[string]int{}
	start := time.Now()
	for i := 0; i < n && !t.Failed(); i++ {
		for j := range 3 {
			rid := fmt.Sprintf("r%d-%d", i, j)
			r.mustRun(t, "create", "--id", fmt.Sprintf("C%04d-%d", i, j), "--title", "card", "--request-id", rid, "--json")
			acked = append(acked, rid)
		}
		kind := compactKills[i%len(compactKills)]
		o := runOpts{env: []string{"BL_FAILPOINT=" + kind}}
		if kind == "sigkill" {
			o = runOpts{fault: killFault, delay: time.Duration(rng.Int64N(int64(15 * time.Millisecond)))}
		}
		if c := r.run("compactor", o, "compact"); c.Exit != 0 {
			killed[kind]++
		}

		// The backlog opens and doctor finds nothing wrong.
		if c := r.run("check", runOpts{}, "doctor", "--json"); c.Exit != 0 {
			t.Fatalf("after %s kill %d: doctor exit %d: %s %s", kind, i, c.Exit, c.Stdout, c.Stderr)
		}
		// Every acknowledged event is in the history once.
		c := r.mustRun(t, "log", "--op", "create", "--json")
		var events []struct {
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(c.Stdout, &events); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, e := range events {
			seen[e.RequestID]++
		}
		for _, rid := range acked {
			if seen[rid] != 1 {
				t.Fatalf("after %s kill %d: acknowledged request %s is in the history %d times", kind, i, rid, seen[rid])
			}
		}
		// And the cards are all there.
		c = r.mustRun(t, "stats", "--json")
		if want := fmt.Sprintf(`"cards": %d,`, len(acked)); !strings.Contains(string(c.Stdout), want) {
			t.Fatalf("after %s kill %d: stats %s, want %s", kind, i, c.Stdout, want)
		}
	}
	// A final, uninterrupted compaction finishes whatever was left.
	r.mustRun(t, "compact")
	t.Logf("compaction crashes: iterations=%d killed=%v acknowledged=%d time=%s", n, killed, len(acked), time.Since(start).Round(time.Millisecond))
}
