//go:build linux

package main

import (
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
	args   func(i int) []string
	prep   func(bl string, i int)
	runs   int // 0: -runs
}

// pairedRow is one line of the table.
type pairedRow struct {
	label               string
	target              float64
	before, after       sample
	floorWall, floorCPU time.Duration
}

var pairedRows []pairedRow

// pairedBench runs the hot commands on a backlog of cards cards and events
// events, each against the floor, bl before and bl after.
func pairedBench(floorBin, before, after, dir string, cards, events int, big bool) {
	generate(dir, cards, events)
	settle(dir)
	size := fmt.Sprintf("%s cards", human(cards))
	if big {
		size = fmt.Sprintf("%s cards, %s events", human(cards), human(events))
	}
	var claimed []string
	claimWith := func(bl string) string {
		out, _ := runCmd(bl, dir, "claim", "--owner", "bench", "--ttl", "1h", "--json")
		var c struct{ ID string }
		must(json.Unmarshal(out, &c))
		return c.ID
	}
	held := func(i int) string {
		if len(claimed) == 0 {
			claimed = append(claimed, claimWith(after))
		}
		return claimed[i%len(claimed)]
	}
	var toComplete []string
	cmds := []pairedCmd{
		{label: "bl --version", target: 1.3, args: func(int) []string { return []string{"version"} }},
		{label: "bl create", target: 2, args: func(i int) []string { return []string{"create", "--title", "paired " + strconv.Itoa(i)} }},
		{label: "bl claim", target: 2, args: func(int) []string { return []string{"claim", "--owner", "bench", "--ttl", "1h", "--json"} }},
		{label: "bl heartbeat", target: 2, args: func(i int) []string { return []string{"heartbeat", "--id", held(i), "--owner", "bench"} }},
		{label: "bl note", target: 2, args: func(i int) []string { return []string{"note", "--id", held(i), "paired note " + strconv.Itoa(i)} }},
		{label: "bl complete", target: 2,
			prep: func(bl string, _ int) { toComplete = append(toComplete, claimWith(after)) },
			args: func(int) []string {
				return []string{"complete", "--id", toComplete[len(toComplete)-1], "--owner", "bench"}
			}},
		{label: "bl ready --limit 10", target: 2.5, args: func(int) []string { return []string{"ready", "--limit", "10"} }},
		{label: "bl show ID", target: 2.5, args: func(i int) []string { return []string{"show", cardID((i * 7919) % cards)} }},
		{label: "bl list --json", args: func(int) []string { return []string{"list", "--json"} }, runs: 5},
	}
	floorOut := filepath.Join(dir, "..", "floor.out")
	for _, c := range cmds {
		n := *runs
		if c.runs != 0 {
			n = min(n, c.runs)
		}
		var fl, bs, as []sample
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
					bs = append(bs, timedCall(before, dir, c, i))
				case 2:
					as = append(as, timedCall(after, dir, c, i))
				}
			}
		}
		r := pairedRow{label: fmt.Sprintf("%s (%s)", c.label, size), target: c.target,
			before: medianSample(bs), after: medianSample(as)}
		f := medianSample(fl)
		r.floorWall, r.floorCPU = f.wall, f.cpu
		pairedRows = append(pairedRows, r)
		fmt.Fprintf(os.Stderr, "  %-48s floor %s  before %s  after %s  (cpu %s / %s / %s)\n", r.label,
			ms(f.wall), ratio(r.before.wall, f.wall), ratio(r.after.wall, f.wall), ms(f.cpu), ms(r.before.cpu), ms(r.after.cpu))
	}
}

// timedCall runs c's i-th call with bl, its prep untimed.
func timedCall(bl, dir string, c pairedCmd, i int) sample {
	if c.prep != nil {
		c.prep(bl, i)
	}
	return runSample(bl, append([]string{"--dir", dir, "--actor", "bench"}, c.args(i)...)...)
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
	return sample{wall: wall, cpu: cpu, rss: ru.Maxrss}
}

// medianSample is the median wall and median CPU (taken apart) and the
// largest RSS of ss.
func medianSample(ss []sample) sample {
	var m sample
	walls := make([]time.Duration, len(ss))
	cpus := make([]time.Duration, len(ss))
	for i, s := range ss {
		walls[i], cpus[i] = s.wall, s.cpu
		m.rss = max(m.rss, s.rss)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	m.wall, m.cpu = walls[len(ss)/2], cpus[len(ss)/2]
	return m
}

// pairedTable renders the paired rows: wall time against the floor's
// (the targets are in floors), CPU time and peak RSS before and after.
func pairedTable(before, after string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Before: `%s`; after: `%s`.\n\n", binaryVersionOf(before), binaryVersionOf(after))
	b.WriteString("| command | floor | before | after | target | | CPU before → after | peak RSS before → after |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range pairedRows {
		target, ok := "", ""
		if r.target > 0 {
			target = fmt.Sprintf("≤ %.1f× floor", r.target)
			ok = verdict(float64(r.after.wall) <= r.target*float64(r.floorWall))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s → %s | %d → %d MB |\n", r.label, ms(r.floorWall),
			ratio(r.before.wall, r.floorWall), ratio(r.after.wall, r.floorWall), target, ok,
			ms(r.before.cpu), ms(r.after.cpu), r.before.rss/1024, r.after.rss/1024)
	}
	return b.String()
}

// binaryVersionOf is what bl version prints for bin.
func binaryVersionOf(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return filepath.Base(bin)
	}
	return strings.TrimSpace(string(out))
}
