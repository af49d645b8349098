//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	json "github.com/goccy/go-json"
)

// The two git-side targets of the paired run: bl diff of two adjacent
// commits against git diff of the same commits, and what one remote claim
// and its complete cost through a bare remote.

var (
	diffEvents   = flag.Int("diff-events", 50_000, "events of history under the paired bl diff row (0: leave it out)")
	remoteCycles = flag.Int("remote-cycles", 5, "claim → complete cycles through a bare remote in the paired run (0: leave them out)")
)

// gitPairedRow is a bl command next to a reference process other than the
// floor, run in turn, one call each per round.
type gitPairedRow struct {
	label, ref string
	target     float64 // in reference calls; 0: none
	refs, bls  []sample
}

var gitPairedRows []gitPairedRow

// remoteCycleRow is what one claim → complete cycle through the remote
// costs: the git server processes it started and the CPU of the whole.
type remoteCycleRow struct {
	label                  string
	cycles                 int
	fetches, pushes        float64 // per cycle, from the wrappers' counts
	claimCPU, completeCPU  time.Duration
	claimWall, completeWal time.Duration
}

var remoteCycleRows []remoteCycleRow

// diffPaired builds a git repository whose backlog holds events events of
// history (compacted into archive segments, as writers keep it), commits
// it, adds one card and commits again, then runs git diff and bl diff of
// the two commits in turn.
func diffPaired(bl, root string, events int) {
	repo := filepath.Join(root, fmt.Sprintf("diff%d", events))
	dir := filepath.Join(repo, ".backlog")
	must(os.RemoveAll(repo))
	must(os.MkdirAll(repo, 0o755))
	gitCmd(repo, "init", "-q", "-b", "main")
	gitCmd(repo, "config", "user.name", "bench")
	gitCmd(repo, "config", "user.email", "bench@example.com")
	generate(dir, max(events/10, 10), events)
	settle(dir)
	gitCmd(repo, "add", "-A")
	gitCmd(repo, "commit", "-q", "-m", "history")
	runCmd(bl, dir, "create", "--title", "one more card")
	gitCmd(repo, "add", "-A")
	gitCmd(repo, "commit", "-q", "-m", "one more card")
	// As a repository is when someone reviews a commit a moment after
	// making it: past the second the index was written in, with the index
	// refreshed (git status does it). Within that second git's index
	// entries are racily clean, and bl hashes the snapshot to know it is
	// the committed one (docs/PERFORMANCE.md, "bl diff").
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	gitCmd(repo, "update-index", "-q", "--refresh")
	gitArgs := []string{"-C", repo, "diff", "HEAD~1", "HEAD"}
	blArgs := []string{"--dir", dir, "diff", "HEAD~1", "HEAD"}
	// Once each untimed: bl-git's first call may write its caches.
	runSample("git", gitArgs...)
	runSample(bl, blArgs...)
	r := gitPairedRow{label: fmt.Sprintf("bl diff of two adjacent commits (%s events of history)", human(events)), ref: "git diff", target: 2}
	for i := range *pairedRuns {
		if i%2 == 0 {
			r.refs = append(r.refs, runSample("git", gitArgs...))
			r.bls = append(r.bls, runSample(bl, blArgs...))
		} else {
			r.bls = append(r.bls, runSample(bl, blArgs...))
			r.refs = append(r.refs, runSample("git", gitArgs...))
		}
	}
	gitPairedRows = append(gitPairedRows, r)
	g, b := medianSample(r.refs), medianSample(r.bls)
	fmt.Fprintf(os.Stderr, "  %-48s git diff %s  bl diff %s  (cpu %s / %s)\n", r.label, ms(g.wall), ratio(b.wall, g.wall), ms(g.cpu), ms(b.cpu))
}

// remoteCyclePaired runs cycles claim → complete cycles from one clone
// through a bare remote whose git-upload-pack and git-receive-pack are
// wrapped to count their calls (bl-git starts them through PATH, as git
// does). The CPU of a bl call includes bl-git's and the git server's,
// which they wait for.
func remoteCyclePaired(bl, root string, cycles int) {
	base := filepath.Join(root, "remotecycle")
	must(os.RemoveAll(base))
	w := newRaceWorld(bl, base)
	wrap := filepath.Join(base, "wrap")
	counts := filepath.Join(base, "counts")
	must(os.MkdirAll(wrap, 0o755))
	for _, name := range []string{"git-upload-pack", "git-receive-pack"} {
		real, err := exec.LookPath(name)
		if err != nil {
			real = gitExecPath(name)
		}
		script := "#!/bin/sh\necho " + name + " >> " + counts + "\nexec " + real + " \"$@\"\n"
		must(os.WriteFile(filepath.Join(wrap, name), []byte(script), 0o755))
	}
	seed := w.clone("seed")
	runCmd(bl, seed, "init")
	for i := range cycles + 1 {
		runCmd(bl, seed, "create", "--id", fmt.Sprintf("Q%03d", i), "--title", "cycled")
	}
	runCmd(bl, seed, "sync", "--push", "--remote", "origin")
	dir := w.clone("c")
	runCmd(bl, dir, "sync", "--pull", "--remote", "origin")
	env := append(os.Environ(), "PATH="+wrap+string(os.PathListSeparator)+os.Getenv("PATH"))
	call := func(args ...string) (sample, []byte) {
		cmd := exec.Command(bl, append([]string{"--dir", dir, "--actor", "bench"}, args...)...)
		cmd.Env = env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if err != nil {
			must(fmt.Errorf("bl %s: %v\n%s", strings.Join(args, " "), err, stderr.String()))
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return sample{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}, []byte(stdout.String())
	}
	// One cycle untimed: the first remote call fetches what the clone
	// lacks and writes its caches.
	cycle := func() (claim, complete sample) {
		claim, out := call("claim", "--owner", "bench", "--ttl", "1h", "--remote", "origin", "--json")
		var c struct{ ID string }
		must(json.Unmarshal(out, &c))
		if c.ID == "" {
			must(fmt.Errorf("bl claim --remote claimed nothing: %s", out))
		}
		complete, _ = call("complete", "--id", c.ID, "--owner", "bench", "--remote", "origin")
		return claim, complete
	}
	cycle()
	must(os.RemoveAll(counts))
	var claims, completes []sample
	for range cycles {
		c, d := cycle()
		claims, completes = append(claims, c), append(completes, d)
	}
	data, _ := os.ReadFile(counts)
	up, rp := strings.Count(string(data), "git-upload-pack"), strings.Count(string(data), "git-receive-pack")
	c, d := medianSample(claims), medianSample(completes)
	r := remoteCycleRow{label: "bl claim --remote, then bl complete --remote", cycles: cycles,
		fetches: float64(up) / float64(cycles), pushes: float64(rp) / float64(cycles),
		claimCPU: c.cpu, completeCPU: d.cpu, claimWall: c.wall, completeWal: d.wall}
	remoteCycleRows = append(remoteCycleRows, r)
	fmt.Fprintf(os.Stderr, "  %-48s %.1f fetches, %.1f pushes per cycle; cpu %s + %s\n", r.label, r.fetches, r.pushes, ms(c.cpu), ms(d.cpu))
}

// gitExecPath is where git keeps its helper programs.
func gitExecPath(name string) string {
	out, err := exec.Command("git", "--exec-path").Output()
	must(err)
	return filepath.Join(strings.TrimSpace(string(out)), name)
}

// gitPairedTables renders the bl diff and remote cycle rows.
func gitPairedTables() string {
	var b strings.Builder
	if len(gitPairedRows) > 0 {
		b.WriteString("\n| command | reference | reference's time | bl | target | | CPU: reference → bl | bl ÷ reference by round: median (quartiles) |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range gitPairedRows {
			g, bl := medianSample(r.refs), medianSample(r.bls)
			target, ok := "", ""
			if r.target > 0 {
				target = fmt.Sprintf("≤ %.1f× %s", r.target, r.ref)
				ok = verdict(float64(bl.wall) <= r.target*float64(g.wall))
			}
			q1, q2, q3 := roundRatios(r.bls, r.refs)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s → %s | %.2f× (%.2f–%.2f) |\n", r.label, r.ref, ms(g.wall), ratio(bl.wall, g.wall),
				target, ok, ms(g.cpu), ratio(bl.cpu, g.cpu), q2, q1, q3)
		}
	}
	if len(remoteCycleRows) > 0 {
		b.WriteString("\n| cycle through a bare remote on this disk | cycles | fetches per cycle | pushes per cycle | target | | claim: wall, CPU | complete: wall, CPU |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range remoteCycleRows {
			fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | ≤ 1 fetch, ≤ 2 pushes | %s | %s, %s | %s, %s |\n", r.label, r.cycles, r.fetches, r.pushes,
				verdict(r.fetches <= 1 && r.pushes <= 2), ms(r.claimWall), ms(r.claimCPU), ms(r.completeWal), ms(r.completeCPU))
		}
		b.WriteString("\nFetches and pushes are the remote's `git-upload-pack` and `git-receive-pack` calls, counted by wrappers on PATH; a call's CPU includes bl-git's and those git processes'.\n")
	}
	return b.String()
}
