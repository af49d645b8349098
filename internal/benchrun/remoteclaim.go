//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"
)

var (
	remoteSizes = flag.String("remote-claims", "2x4,6x4,8x4", "clones x processes for the remote claim race, comma-separated")
	remoteCards = flag.Int("remote-cards", 60, "cards the remote claim race claims and completes")
)

// remoteClaimBench races clones × procs processes through one bare remote,
// each looping bl claim --remote → bl complete --remote until nothing is
// claimable, as a team of agents on separate machines would. It reports
// claims per second, the claim latency (a whole claim, retries included),
// the events the remote holds afterwards, double wins, and whether a plain
// git clone of the branch (bl's own view, without any bl exchange) already
// shows every card done.
func remoteClaimBench(bl, root string) {
	var rates = map[string]float64{}
	for _, size := range strings.Split(*remoteSizes, ",") {
		var clones, procs int
		if _, err := fmt.Sscanf(strings.TrimSpace(size), "%dx%d", &clones, &procs); err != nil {
			must(fmt.Errorf("-remote-claims %q: %w", size, err))
		}
		rates[size] = remoteClaimRace(bl, root, clones, procs, *remoteCards)
	}
	if r2, r6 := rates["2x4"], rates["6x4"]; r2 > 0 && r6 > 0 {
		add("remote claims/s at 6 × 4 over the rate at 2 × 4", fmt.Sprintf("%.2f", r6/r2), "≥ 0.9", verdict(r6/r2 >= 0.9))
	}
}

func remoteClaimRace(bl, root string, clones, procs, cards int) float64 {
	label := fmt.Sprintf("%d clones × %d", clones, procs)
	base := filepath.Join(root, fmt.Sprintf("race%dx%d", clones, procs))
	bare := filepath.Join(base, "remote.git")
	must(os.MkdirAll(base, 0o755))
	gitCmd(base, "init", "-q", "--bare", "-b", "main", bare)
	clone := func(name string) string {
		dir := filepath.Join(base, name)
		gitCmd(base, "clone", "-q", bare, dir)
		gitCmd(dir, "config", "user.name", "bench")
		gitCmd(dir, "config", "user.email", "bench@example.com")
		gitCmd(dir, "checkout", "-q", "-B", "main")
		return filepath.Join(dir, ".backlog")
	}
	seed := clone("seed")
	runCmd(bl, seed, "init")
	for i := 0; i < cards; i++ {
		runCmd(bl, seed, "create", "--id", fmt.Sprintf("R%03d", i), "--title", "raced for", "--priority", strconv.Itoa(i%3))
	}
	runCmd(bl, seed, "sync", "--push", "--remote", "origin")
	var dirs []string
	for i := 0; i < clones; i++ {
		d := clone(fmt.Sprintf("c%d", i))
		runCmd(bl, d, "sync", "--pull", "--remote", "origin")
		dirs = append(dirs, d)
	}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		won       = map[string]int{}
		failures  []string
		n         int
	)
	// call runs one request, again with the same request id while bl says
	// the remote kept rejecting it or the backlog lock stayed busy.
	call := func(dir string, args ...string) ([]byte, error) {
		var last error
		for try := 0; try < 10; try++ {
			mu.Lock()
			n++
			mu.Unlock()
			cmd := exec.Command(bl, append([]string{"--dir", dir, "--actor", "bench"}, args...)...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err == nil {
				return []byte(stdout.String()), nil
			}
			last = fmt.Errorf("bl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
			code := cmd.ProcessState.ExitCode()
			if code != 1 && code != 5 {
				break
			}
		}
		return nil, last
	}
	var wg sync.WaitGroup
	start := time.Now()
	for c, dir := range dirs {
		for p := 0; p < procs; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("c%dp%d", c, p)
				for k := 0; ; k++ {
					t0 := time.Now()
					out, err := call(dir, "claim", "--owner", owner, "--ttl", "1h", "--remote", "origin", "--json", "--request-id", fmt.Sprintf("%s-claim-%d", owner, k))
					d := time.Since(t0)
					if err != nil {
						mu.Lock()
						failures = append(failures, err.Error())
						mu.Unlock()
						return
					}
					var card *struct {
						ID    string `json:"id"`
						Epoch int64  `json:"claim_epoch"`
					}
					must(json.Unmarshal(out, &card))
					if card == nil {
						return
					}
					mu.Lock()
					latencies = append(latencies, d)
					won[card.ID]++
					mu.Unlock()
					if _, err := call(dir, "complete", "--id", card.ID, "--owner", owner, "--epoch", strconv.FormatInt(card.Epoch, 10),
						"--remote", "origin", "--json", "--request-id", fmt.Sprintf("%s-complete-%d", owner, k)); err != nil {
						mu.Lock()
						failures = append(failures, err.Error())
						mu.Unlock()
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, f := range failures {
		fmt.Fprintf(os.Stderr, "  %s: %s\n", label, f)
	}
	double := 0
	for _, k := range won {
		if k > 1 {
			double++
		}
	}
	slices.Sort(latencies)
	pct := func(p int) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, len(latencies)*p/100)]
	}
	rate := float64(len(latencies)) / elapsed.Seconds()
	// What the remote holds: a fresh clone that pulls through bl, and a
	// plain git clone read as it is.
	check := clone("check")
	runCmd(bl, check, "sync", "--pull", "--remote", "origin")
	var st struct {
		Events    int64          `json:"events"`
		Conflicts int            `json:"conflicts"`
		ByStatus  map[string]int `json:"by_status"`
	}
	out, _ := runCmd(bl, check, "stats", "--json")
	must(json.Unmarshal(out, &st))
	plain := clone("plain")
	out, _ = runCmd(bl, plain, "stats", "--json")
	var pst struct {
		ByStatus map[string]int `json:"by_status"`
	}
	must(json.Unmarshal(out, &pst))

	add(fmt.Sprintf("remote claims/s, %s, %d cards", label, cards), fmt.Sprintf("%.2f", rate), target(clones, procs, "≥ 8"), verdictIf(clones == 8, rate >= 8))
	add(fmt.Sprintf("remote claim p50 / p90, %s", label), fmt.Sprintf("%s / %s", ms(pct(50)), ms(pct(90))), target(clones, procs, "p90 ≤ 1 s"), verdictIf(clones == 8, pct(90) <= time.Second))
	add(fmt.Sprintf("events on the remote after %d cards claimed and completed, %s", cards, label), fmt.Sprintf("%d (%d refused)", st.Events, st.Conflicts), fmt.Sprintf("≤ %d", 4*cards), verdict(st.Events <= int64(4*cards)))
	add(fmt.Sprintf("double wins / failed calls / bl calls, %s", label), fmt.Sprintf("%d / %d / %d", double, len(failures), n), "0 / 0", verdict(double == 0 && len(failures) == 0))
	add(fmt.Sprintf("cards done in a plain git clone of the branch, %s", label), fmt.Sprintf("%d of %d (bl: %d)", pst.ByStatus["done"], cards, st.ByStatus["done"]), "", "")
	return rate
}

func target(clones, procs int, t string) string {
	if clones == 8 && procs == 4 {
		return t
	}
	return ""
}

func verdictIf(applies, ok bool) string {
	if !applies {
		return ""
	}
	return verdict(ok)
}
