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
	"syscall"
	"time"

	json "github.com/goccy/go-json"
)

// The paired run: the floor, the bl before a change (-before) and the bl
// after it, run in turn on the same backlog, one call of each per round,
// so that a machine loaded by other work slows all three alike. It reports
// medians of wall time and of CPU time (user + system, from rusage), which
// other processes disturb far less than wall time.

// sample is one process's cost.
type sample struct {
	wall, cpu time.Duration
	rss       int64 // KiB
}

// pairedCmd is one command of the paired table: args builds the i-th
// call's arguments; prep, when set, runs untimed before each timed call.
type pairedCmd struct {
	label  string
	target float64 // the most it may cost, in floors; 0: no target
	args   func(bl string, i int) []string
	prep   func(bl string, i int)
	runs   int // 0: -runs
	// cpuTarget and rssTarget, when set, are the target instead: the
	// most CPU time a call may take and the most memory (KiB) it may hold.
	cpuTarget time.Duration
	rssTarget int64
}

// pairedRow is one line of the table, with the samples of every round
// (floors[i], befores[i] and afters[i] ran back to back).
type pairedRow struct {
	label                   string
	target                  float64
	cpuTarget               time.Duration
	rssTarget               int64 // KiB
	before, after           sample
	floorWall, floorCPU     time.Duration
	floors, befores, afters []sample
}

var pairedRows []pairedRow

// pairedRuns is the rounds per row: more than -runs, because a row's
// floor moves by more than most rows' distance to their target, and the
// rounds cost milliseconds each.
var pairedRuns = flag.Int("paired-runs", 31, "rounds per row of the paired table (the diff row too)")

// pairedBench runs the hot commands on a backlog of cards cards and events
// events, each against the floor, bl before and bl after. Each bl has its
// own copy of the backlog: the two may keep different caches (an index
// format one does not read), and sharing one would make each rebuild the
// other's at every call.
func pairedBench(floorBin, before, after, dir string, cards, events int, big bool) {
	generate(dir, cards, events)
	settle(dir)
	dirs := map[string]string{after: dir, before: dir + "-before"}
	must(os.RemoveAll(dirs[before]))
	must(exec.Command("cp", "-a", dir, dirs[before]).Run())
	size := fmt.Sprintf("%s cards", human(cards))
	if big {
		size = fmt.Sprintf("%s cards, %s events", human(cards), human(events))
	}
	// The backlogs just written (hundreds of MB at 100k cards) are written
	// back now, not under the first rows' calls.
	syscall.Sync()
	claimed := map[string][]string{}
	claimWith := func(bl string) string {
		out, _ := runCmd(bl, dirs[bl], "claim", "--owner", "bench", "--ttl", "1h", "--json")
		var c struct{ ID string }
		must(json.Unmarshal(out, &c))
		return c.ID
	}
	held := func(bl string, i int) string {
		if len(claimed[bl]) == 0 {
			claimed[bl] = append(claimed[bl], claimWith(bl))
		}
		return claimed[bl][i%len(claimed[bl])]
	}
	toComplete := map[string]string{}
	cmds := []pairedCmd{
		{label: "bl --version", target: 1.3, args: func(string, int) []string { return []string{"version"} }},
		{label: "bl create", target: 2, args: func(_ string, i int) []string { return []string{"create", "--title", "paired " + strconv.Itoa(i)} }},
		{label: "bl claim", target: 2, args: func(string, int) []string { return []string{"claim", "--owner", "bench", "--ttl", "1h", "--json"} }},
		{label: "bl heartbeat", target: 2, args: func(bl string, i int) []string { return []string{"heartbeat", "--id", held(bl, i), "--owner", "bench"} }},
		{label: "bl note", target: 2, args: func(bl string, i int) []string {
			return []string{"note", "--id", held(bl, i), "paired note " + strconv.Itoa(i)}
		}},
		{label: "bl complete", target: 2,
			prep: func(bl string, _ int) { toComplete[bl] = claimWith(bl) },
			args: func(bl string, _ int) []string {
				return []string{"complete", "--id", toComplete[bl], "--owner", "bench"}
			}},
		{label: "bl ready --limit 10", target: 2.5, args: func(string, int) []string { return []string{"ready", "--limit", "10"} }},
		{label: "bl show ID", target: 2.5, args: func(_ string, i int) []string { return []string{"show", cardID((i * 7919) % cards)} }},
		{label: "bl list --json", args: func(string, int) []string { return []string{"list", "--json"} }, runs: 5},
	}
	if cards >= 100_000 {
		// Issue 36: 100k cards listed in at most 0.5 s of CPU and 150 MB.
		list := &cmds[len(cmds)-1]
		list.cpuTarget, list.rssTarget = 500*time.Millisecond, 150<<10
	}
	// One untimed call each first: a bl that finds the other's cache
	// rebuilds its own once, here.
	for _, bl := range []string{before, after} {
		runCmd(bl, dirs[bl], "ready", "--limit", "1")
	}
	floorOut := filepath.Join(dir, "..", "floor.out")
	for _, c := range cmds {
		n := *pairedRuns
		if c.runs != 0 {
			n = min(n, c.runs)
		}
		r, f := pairedMeasure(c, n, floorBin, floorOut, before, after, dirs)
		r.label = fmt.Sprintf("%s (%s)", c.label, size)
		pairedRows = append(pairedRows, r)
		fmt.Fprintf(os.Stderr, "  %-48s floor %s  before %s  after %s  (cpu %s / %s / %s)\n", r.label,
			ms(f.wall), ratio(r.before.wall, f.wall), ratio(r.after.wall, f.wall), ms(f.cpu), ms(r.before.cpu), ms(r.after.cpu))
	}
}

// pairedMeasure runs one command n times with each bl and the floor in
// turn, and returns the medians (and the peak RSS) as a row, with the
// floor's median.
func pairedMeasure(c pairedCmd, n int, floorBin, floorOut, before, after string, dirs map[string]string) (pairedRow, sample) {
	var fl, bs, as []sample
	// One untimed round first: the row's first calls fault in what the
	// row before did not use.
	runSample(floorBin, floorOut)
	timedCall(before, dirs[before], c, n)
	timedCall(after, dirs[after], c, n)
	for i := range n {
		// Rotate who goes first, so none always runs on a warm cache.
		order := []int{0, 1, 2}
		for k := 0; k < i%3; k++ {
			order = append(order[1:], order[0])
		}
		for _, who := range order {
			switch who {
			case 0:
				fl = append(fl, runSample(floorBin, floorOut))
			case 1:
				bs = append(bs, timedCall(before, dirs[before], c, i))
			case 2:
				as = append(as, timedCall(after, dirs[after], c, i))
			}
		}
	}
	r := pairedRow{target: c.target, cpuTarget: c.cpuTarget, rssTarget: c.rssTarget,
		before: medianSample(bs), after: medianSample(as), floors: fl, befores: bs, afters: as}
	r.before.rss, r.after.rss = peakRSS(before, dirs[before], c, n), peakRSS(after, dirs[after], c, n)
	f := medianSample(fl)
	r.floorWall, r.floorCPU = f.wall, f.cpu
	return r, f
}

// timedCall runs c's i-th call with bl, its prep untimed.
func timedCall(bl, dir string, c pairedCmd, i int) sample {
	if c.prep != nil {
		c.prep(bl, i)
	}
	return runSample(bl, append([]string{"--dir", dir, "--actor", "bench"}, c.args(bl, i)...)...)
}

// runSample runs one process and returns its wall time, CPU time and
// peak RSS.
func runSample(bin string, args ...string) sample {
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
		os.Exit(1)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return sample{wall: wall, cpu: cpu}
}

// peakRSS is the peak RSS in KiB of one more call of c, untimed, through
// /usr/bin/time: the rusage of a child this process starts counts this
// process's own memory too (the child shares it until it execs), and a
// benchmark that generated a large backlog holds hundreds of MB. 0 when
// /usr/bin/time is missing.
func peakRSS(bl, dir string, c pairedCmd, i int) int64 {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return 0
	}
	if c.prep != nil {
		c.prep(bl, i)
	}
	args := append([]string{"-f", "rss=%M", bl, "--dir", dir, "--actor", "bench"}, c.args(bl, i)...)
	cmd := exec.Command("/usr/bin/time", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0
	}
	out := stderr.String()
	k := strings.LastIndex(out, "rss=")
	if k < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(out[k+4:]), 10, 64)
	return n
}

// medianSample is the median wall and median CPU (taken apart) of ss.
func medianSample(ss []sample) sample {
	var m sample
	walls := make([]time.Duration, len(ss))
	cpus := make([]time.Duration, len(ss))
	for i, s := range ss {
		walls[i], cpus[i] = s.wall, s.cpu
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	m.wall, m.cpu = walls[len(ss)/2], cpus[len(ss)/2]
	return m
}

// pairedTable renders the paired rows: wall time against the floor's
// (the targets are in floors), CPU time and peak RSS before and after.
// The target's verdict is read from the ratio of the two medians; the
// last two columns read the same samples two other ways (see
// docs/PERFORMANCE.md, "Reading the paired table"): the median of each
// round's own ratio, with its quartiles, and the after median over one
// floor pooled from every round of the run.
func pairedTable(before, after string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Before: `%s`; after: `%s`.\n\n", binaryVersionOf(before), binaryVersionOf(after))
	pooled := pooledFloor(pairedRows)
	b.WriteString("| command | floor | before | after | target | | CPU: floor, before → after | peak RSS before → after | after ÷ floor by round: median (quartiles) | after ÷ pooled floor | the three readings |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range pairedRows {
		target, ok := "", ""
		if r.target > 0 {
			target = fmt.Sprintf("≤ %.1f× floor", r.target)
			ok = verdict(float64(r.after.wall) <= r.target*float64(r.floorWall))
		}
		q1, q2, q3 := roundRatios(r.afters, r.floors)
		onPooled := float64(r.after.wall) / float64(pooled)
		three := ""
		if r.target > 0 {
			three = agreement(r.target, float64(r.after.wall)/float64(r.floorWall), q2, onPooled)
		}
		if r.cpuTarget > 0 {
			target = fmt.Sprintf("≤ %.1f s CPU, ≤ %d MB", r.cpuTarget.Seconds(), r.rssTarget>>10)
			ok = verdict(r.after.cpu <= r.cpuTarget && r.after.rss > 0 && r.after.rss <= r.rssTarget)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s, %s → %s | %d → %d MB | %.2f× (%.2f–%.2f) | %.2f× | %s |\n", r.label, ms(r.floorWall),
			ratio(r.before.wall, r.floorWall), ratio(r.after.wall, r.floorWall), target, ok,
			ms(r.floorCPU), ratio(r.before.cpu, r.floorCPU), ratio(r.after.cpu, r.floorCPU), r.before.rss/1024, r.after.rss/1024,
			q2, q1, q3, onPooled, three)
	}
	fmt.Fprintf(&b, "\nPooled floor: %s, the median of all %d floor calls of the run.\n", ms(pooled), pooledCount(pairedRows))
	return b.String()
}

// agreement is "met" or "NOT MET" when the three readings of a row agree
// on its target, "undecided" when they do not.
func agreement(target float64, readings ...float64) string {
	met := 0
	for _, r := range readings {
		if r <= target {
			met++
		}
	}
	switch met {
	case len(readings):
		return "met"
	case 0:
		return "NOT MET"
	}
	return "undecided"
}

// roundRatios is the first quartile, the median and the third quartile
// of xs[i].wall / floors[i].wall: each round's call over the floor that
// ran next to it.
func roundRatios(xs, floors []sample) (q1, q2, q3 float64) {
	rs := make([]float64, 0, len(xs))
	for i := range min(len(xs), len(floors)) {
		rs = append(rs, float64(xs[i].wall)/float64(floors[i].wall))
	}
	if len(rs) == 0 {
		return 0, 0, 0
	}
	slices.Sort(rs)
	return rs[len(rs)/4], rs[len(rs)/2], rs[len(rs)*3/4]
}

// pooledFloor is the median wall time of every floor call of the paired
// run, whichever row it ran next to.
func pooledFloor(rows []pairedRow) time.Duration {
	var all []sample
	for _, r := range rows {
		all = append(all, r.floors...)
	}
	if len(all) == 0 {
		return 1
	}
	return medianSample(all).wall
}

func pooledCount(rows []pairedRow) int {
	n := 0
	for _, r := range rows {
		n += len(r.floors)
	}
	return n
}

// writeRawSamples writes every paired round as tab-separated values
// (-raw): row, round, then wall and CPU in microseconds of the floor,
// bl before and bl after.
func writeRawSamples(path string) {
	var b strings.Builder
	b.WriteString("row\tround\tfloor_wall_us\tfloor_cpu_us\tbefore_wall_us\tbefore_cpu_us\tafter_wall_us\tafter_cpu_us\n")
	for _, r := range pairedRows {
		for i := range r.floors {
			fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", r.label, i,
				r.floors[i].wall.Microseconds(), r.floors[i].cpu.Microseconds(),
				r.befores[i].wall.Microseconds(), r.befores[i].cpu.Microseconds(),
				r.afters[i].wall.Microseconds(), r.afters[i].cpu.Microseconds())
		}
	}
	must(os.WriteFile(path, []byte(b.String()), 0o644))
}

// binaryVersionOf is what bl version prints for bin.
func binaryVersionOf(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return filepath.Base(bin)
	}
	return strings.TrimSpace(string(out))
}
