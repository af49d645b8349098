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
	w := newRaceWorld(bl, filepath.Join(root, fmt.Sprintf("race%dx%d", clones, procs)))
	seed := w.clone("seed")
	runCmd(bl, seed, "init")
	for i := 0; i < cards; i++ {
		runCmd(bl, seed, "create", "--id", fmt.Sprintf("R%03d", i), "--title", "raced for", "--priority", strconv.Itoa(i%3))
	}
	runCmd(bl, seed, "sync", "--push", "--remote", "origin")
	var dirs []string
	for i := 0; i < clones; i++ {
		d := w.clone(fmt.Sprintf("c%d", i))
		runCmd(bl, d, "sync", "--pull", "--remote", "origin")
		dirs = append(dirs, d)
	}

	r := &race{bl: bl, won: map[string]int{}}
	var wg sync.WaitGroup
	start := time.Now()
	for c, dir := range dirs {
		for p := 0; p < procs; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.worker(dir, fmt.Sprintf("c%dp%d", c, p))
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, f := range r.failures {
		fmt.Fprintf(os.Stderr, "  %s: %s\n", label, f)
	}
	double := 0
	for _, k := range r.won {
		if k > 1 {
			double++
		}
	}
	slices.Sort(r.latencies)
	pct := func(p int) time.Duration {
		if len(r.latencies) == 0 {
			return 0
		}
		return r.latencies[min(len(r.latencies)-1, len(r.latencies)*p/100)]
	}
	rate := float64(len(r.latencies)) / elapsed.Seconds()
	events, refused, done, plainDone := w.remoteHolds()

	add(fmt.Sprintf("remote claims/s, %s, %d cards", label, cards), fmt.Sprintf("%.2f", rate), target(clones, procs, "≥ 8"), verdictIf(clones == 8, rate >= 8))
	add(fmt.Sprintf("remote claim p50 / p90, %s", label), fmt.Sprintf("%s / %s", ms(pct(50)), ms(pct(90))), target(clones, procs, "p90 ≤ 1 s"), verdictIf(clones == 8, pct(90) <= time.Second))
	add(fmt.Sprintf("events on the remote after %d cards claimed and completed, %s", cards, label), fmt.Sprintf("%d (%d refused)", events, refused), fmt.Sprintf("≤ %d", 4*cards), verdict(events <= int64(4*cards)))
	add(fmt.Sprintf("double wins / failed calls / bl calls, %s", label), fmt.Sprintf("%d / %d / %d", double, len(r.failures), r.n), "0 / 0", verdict(double == 0 && len(r.failures) == 0))
	add(fmt.Sprintf("cards done in a plain git clone of the branch, %s", label), fmt.Sprintf("%d of %d (bl: %d)", plainDone, cards, done), "", "")
	return rate
}

// raceWorld is a bare remote and the clones of it a race makes.
type raceWorld struct {
	bl, base, bare string
}

func newRaceWorld(bl, base string) *raceWorld {
	w := &raceWorld{bl: bl, base: base, bare: filepath.Join(base, "remote.git")}
	must(os.MkdirAll(base, 0o755))
	gitCmd(base, "init", "-q", "--bare", "-b", "main", w.bare)
	return w
}

// clone makes a clone of the remote on main and returns its backlog
// directory.
func (w *raceWorld) clone(name string) string {
	dir := filepath.Join(w.base, name)
	gitCmd(w.base, "clone", "-q", w.bare, dir)
	gitCmd(dir, "config", "user.name", "bench")
	gitCmd(dir, "config", "user.email", "bench@example.com")
	gitCmd(dir, "checkout", "-q", "-B", "main")
	return filepath.Join(dir, ".backlog")
}

// remoteHolds reads what the remote holds: through a fresh clone that
// pulls through bl (its events, refused ones, done cards), and through a
// plain git clone read as it is (its done cards).
func (w *raceWorld) remoteHolds() (events int64, refused, done, plainDone int) {
	check := w.clone("check")
	runCmd(w.bl, check, "sync", "--pull", "--remote", "origin")
	var st struct {
		Events    int64          `json:"events"`
		Conflicts int            `json:"conflicts"`
		ByStatus  map[string]int `json:"by_status"`
	}
	out, _ := runCmd(w.bl, check, "stats", "--json")
	must(json.Unmarshal(out, &st))
	plain := w.clone("plain")
	out, _ = runCmd(w.bl, plain, "stats", "--json")
	var pst struct {
		ByStatus map[string]int `json:"by_status"`
	}
	must(json.Unmarshal(out, &pst))
	return st.Events, st.Conflicts, st.ByStatus["done"], pst.ByStatus["done"]
}

// race is what the processes of one race share.
type race struct {
	bl        string
	mu        sync.Mutex
	latencies []time.Duration // of the claims that won a card
	won       map[string]int  // claims won per card
	failures  []string
	n         int // bl calls, retries included
}

// worker loops claim → complete through the remote as owner until
// nothing is claimable or a call fails.
func (r *race) worker(dir, owner string) {
	for k := 0; ; k++ {
		t0 := time.Now()
		out, err := r.call(dir, "claim", "--owner", owner, "--ttl", "1h", "--remote", "origin", "--json", "--request-id", fmt.Sprintf("%s-claim-%d", owner, k))
		d := time.Since(t0)
		if err != nil {
			r.fail(err)
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
		r.mu.Lock()
		r.latencies = append(r.latencies, d)
		r.won[card.ID]++
		r.mu.Unlock()
		if _, err := r.call(dir, "complete", "--id", card.ID, "--owner", owner, "--epoch", strconv.FormatInt(card.Epoch, 10),
			"--remote", "origin", "--json", "--request-id", fmt.Sprintf("%s-complete-%d", owner, k)); err != nil {
			r.fail(err)
			return
		}
	}
}

func (r *race) fail(err error) {
	r.mu.Lock()
	r.failures = append(r.failures, err.Error())
	r.mu.Unlock()
}

// call runs one request, again with the same request id while bl says
// the remote kept rejecting it or the backlog lock stayed busy.
func (r *race) call(dir string, args ...string) ([]byte, error) {
	var last error
	for try := 0; try < 10; try++ {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
		cmd := exec.Command(r.bl, append([]string{"--dir", dir, "--actor", "bench"}, args...)...)
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
