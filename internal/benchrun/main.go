//go:build linux

// Command benchrun measures bl as its users run it: whole processes on real
// backlogs, next to the floor of a trivial Go process doing one write and
// one fsync on the same disk. make bench runs it and writes the table to
// docs/PERFORMANCE.md.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

var (
	blPath  = flag.String("bl", "bin/bl", "the bl binary to measure")
	out     = flag.String("out", "", "also write the report to this file")
	runs    = flag.Int("runs", 15, "runs per whole-process figure (the median is reported)")
	bigN    = flag.Int("big-cards", 100_000, "cards in the large backlog")
	bigEv   = flag.Int("big-events", 1_000_000, "events of history in the large backlog")
	workDir = flag.String("work", "", "directory for the backlogs (default: a temp dir)")
	only    = flag.String("only", "", "run only these parts, comma-separated: paired, small, big, concurrent, watch, run, sync, remote (default: all)")
	syncEv  = flag.String("sync-events", "1000,20000,200000", "events of history in the backlogs bl sync is measured on, comma-separated")
	before  = flag.String("before", "", "a bl binary from before a change: the paired table runs it, bl and the floor in turn")
	pairedN = flag.String("paired-cards", "1500,100000", "cards in the backlogs of the paired table, comma-separated")
	rawOut  = flag.String("raw", "", "also write every round of the paired table to this file, tab-separated")
	asBuilt = flag.Bool("as-built", false, "time the binaries as the linker wrote them instead of installed copies (see installed)")
)

// part reports whether the named part of the run was asked for.
func part(name string) bool {
	return *only == "" || slices.Contains(strings.Split(*only, ","), name)
}

type row struct {
	what, value, target, verdict string
}

var report []row

func add(what, value, target, verdict string) {
	report = append(report, row{what, value, target, verdict})
	fmt.Fprintf(os.Stderr, "  %-58s %s\n", what, value)
}

func main() {
	flag.Parse()
	bl, err := filepath.Abs(*blPath)
	must(err)
	dir := *workDir
	if dir == "" {
		dir, err = os.MkdirTemp("", "bl-bench-")
		must(err)
		defer os.RemoveAll(dir)
	}
	fmt.Fprintf(os.Stderr, "benchmarking %s in %s\n", bl, dir)
	built := bl
	if !*asBuilt {
		bl = installed(bl, filepath.Join(dir, "installed"), true)
	}

	floor := measureFloor(dir)
	add("floor: trivial Go process + one write + fdatasync", ms(floor), "", "")
	linked := measureLinkedFloor(dir)
	add("the same with kong, go-json, flock and fsnotify linked in, unused", ratio(linked, floor), "", "")

	if *before != "" && part("paired") {
		pairedPart(bl, dir)
	}
	if part("small") {
		small := filepath.Join(dir, "small", ".backlog")
		generate(small, 1000, 1000)
		settle(small)
		perCommand(bl, small, "1k cards", floor, 2)
	}
	if part("big") {
		big := filepath.Join(dir, "big", ".backlog")
		generate(big, *bigN, *bigEv)
		comp := timeCmd(bl, big, "compact")
		add(fmt.Sprintf("bl compact of %d events (%d cards)", *bigEv, *bigN), ms(comp), "≤ 5 s", verdict(comp <= 5*time.Second))
		settle(big)
		perCommand(bl, big, fmt.Sprintf("%s cards, %s events of history", human(*bigN), human(*bigEv)), floor, 3)
	}
	if part("concurrent") {
		for _, n := range []int{1, 8, 32, 64} {
			concurrentClaims(bl, filepath.Join(dir, fmt.Sprintf("conc%d", n), ".backlog"), n)
		}
	}
	if part("watch") {
		watchLatency(bl, filepath.Join(dir, "watch", ".backlog"))
	}
	if part("run") {
		superviseBench(bl, dir)
	}
	if part("sync") {
		for _, f := range strings.Split(*syncEv, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			must(err)
			syncBench(bl, dir, n)
		}
	}
	if part("remote") {
		remoteClaimBench(bl, dir)
	}
	printReport(bl, built)
}

// pairedPart runs the paired table (the floor, -before and bl in turn) at
// each size of -paired-cards; from 100k cards on, with -big-events of
// history.
func pairedPart(bl, dir string) {
	b, err := filepath.Abs(*before)
	must(err)
	if !*asBuilt {
		b = installed(b, filepath.Join(dir, "installed-before"), false)
	}
	for _, f := range strings.Split(*pairedN, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		must(err)
		ev := n
		if n >= 100_000 {
			ev = *bigEv
		}
		pairedBench(filepath.Join(dir, "floor-bin"), b, bl, filepath.Join(dir, "paired"+f, ".backlog"), n, ev, n >= 100_000)
	}
	if *diffEvents > 0 {
		diffPaired(bl, dir, *diffEvents)
	}
	if *remoteCycles > 0 {
		remoteCyclePaired(bl, dir, *remoteCycles)
	}
}

// measureFloor builds and runs a Go program that writes one line and
// fdatasyncs it: the least any durable bl call can cost.
func measureFloor(dir string) time.Duration {
	src := filepath.Join(dir, "floor")
	must(os.MkdirAll(src, 0o755))
	must(os.WriteFile(filepath.Join(src, "main.go"), []byte(`package main

import (
	"os"
	"syscall"
)

func main() {
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		panic(err)
	}
	f.Write([]byte("{\"v\":1,\"id\":\"0123456789abcdef\",\"op\":\"heartbeat\",\"card\":\"A1\",\"owner\":\"w\",\"epoch\":1}\n"))
	syscall.Fdatasync(int(f.Fd()))
	f.Close()
}
`), 0o644))
	must(os.WriteFile(filepath.Join(src, "go.mod"), []byte("module floor\n\ngo 1.22\n"), 0o644))
	bin := filepath.Join(dir, "floor-bin")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Stderr = os.Stderr
	must(cmd.Run())
	if !*asBuilt {
		must(os.Rename(installed(bin, filepath.Join(dir, "installed-floor"), false), bin))
	}
	target := filepath.Join(dir, "floor.out")
	return median(*runs*2, func(int) time.Duration {
		start := time.Now()
		must(exec.Command(bin, target).Run())
		return time.Since(start)
	})
}

// linkFloorBuild is the build of the linked floor: static, as make build
// builds bl. kong links os/user, which with cgo would make this floor a
// dynamic binary that starts libc and cgo's threads, which bl does not.
func linkFloorBuild(bin string) *exec.Cmd {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./internal/benchrun/linkfloor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// installed copies the binary bin into dir with write(2), as make
// install, go install and unpacking a release leave bl, and returns the
// copy's path; with git, bl-git from bin's directory too, where the copy
// of bl looks for it. A binary the linker has just written is held in the
// page cache as the linker wrote it, and on this machine such a file
// starts 10–25% slower in CPU than a copy of the same bytes (measured A/A
// in docs/PERFORMANCE.md): that is the build's state, not the program's.
func installed(bin, dir string, git bool) string {
	must(os.MkdirAll(dir, 0o755))
	dst := filepath.Join(dir, filepath.Base(bin))
	copyExecutable(bin, dst)
	if git {
		if g := filepath.Join(filepath.Dir(bin), "bl-git"); fileExists(g) {
			copyExecutable(g, filepath.Join(dir, "bl-git"))
		}
	}
	return dst
}

func copyExecutable(src, dst string) {
	in, err := os.Open(src)
	must(err)
	defer in.Close()
	must(os.RemoveAll(dst))
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	must(err)
	// A plain read/write loop: no copy_file_range, so the copy's pages
	// are written as an installer writes them.
	buf := make([]byte, 1<<20)
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			_, werr := out.Write(buf[:n])
			must(werr)
		}
		if rerr == io.EOF {
			break
		}
		must(rerr)
	}
	must(out.Close())
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// measureLinkedFloor is the floor program with bl's required libraries
// linked in (internal/benchrun/linkfloor): what every bl process pays
// before it does anything.
func measureLinkedFloor(dir string) time.Duration {
	bin := filepath.Join(dir, "linkfloor-bin")
	cmd := linkFloorBuild(bin)
	cmd.Stderr = os.Stderr
	must(cmd.Run())
	if !*asBuilt {
		must(os.Rename(installed(bin, filepath.Join(dir, "installed-linkfloor"), false), bin))
	}
	target := filepath.Join(dir, "linkfloor.out")
	return median(*runs*2, func(int) time.Duration {
		start := time.Now()
		must(exec.Command(bin, target).Run())
		return time.Since(start)
	})
}

// generate writes a backlog of cards cards whose ledger holds events
// events: creates, then claim/heartbeat/release rounds. It is written
// directly, without fsync per line, as a fixture; the backlog keeps the
// default configuration.
func generate(dir string, cards, events int) {
	_, err := ledger.Init(dir)
	must(err)
	f, err := os.Create(filepath.Join(dir, ledger.LedgerFile))
	must(err)
	w := bufio.NewWriterSize(f, 1<<20)
	at := time.Now().Add(-48 * time.Hour).UTC()
	n := 0
	emit := func(e *ledger.Event) {
		at = at.Add(time.Microsecond)
		e.V, e.At, e.ID, e.Actor = 1, at, fmt.Sprintf("%016x", n+1), "bench"
		line, err := ledger.EncodeLine(e)
		must(err)
		w.Write(line)
		n++
	}
	for i := range cards {
		t, p, ph := "card number "+strconv.Itoa(i), i%10, "M"+strconv.Itoa(i%3)
		emit(&ledger.Event{Op: ledger.OpCreate, Card: cardID(i), Fields: &ledger.Fields{Title: &t, Priority: &p, Phase: &ph}})
	}
	ver := make([]int64, cards)
	ep := make([]int64, cards)
	for i := 0; n < events; i++ {
		c := i % cards
		ep[c]++
		emit(&ledger.Event{Op: ledger.OpClaim, Card: cardID(c), Owner: "w", TTLSeconds: 60, ExpectVersion: ver[c] + 1, Epoch: ep[c]})
		emit(&ledger.Event{Op: ledger.OpHeartbeat, Card: cardID(c), Owner: "w", Epoch: ep[c]})
		emit(&ledger.Event{Op: ledger.OpRelease, Card: cardID(c), Owner: "w", Epoch: ep[c]})
		ver[c] += 3
	}
	must(w.Flush())
	must(f.Sync())
	must(f.Close())
}

// settle brings a generated backlog to the state its writers would keep it
// in: compacted, then a ledger tail half its compaction threshold long
// (claim, heartbeat and release rounds), the average tail between two
// automatic compactions.
func settle(dir string) {
	ctx := context.Background()
	b, err := ledger.Open(dir, ledger.Options{})
	must(err)
	defer b.Close()
	_, err = b.Compact(ctx)
	must(err)
	cards, err := b.List(ledger.Filter{Status: []ledger.Status{ledger.StatusReady}, Limit: 500}, ledger.SortClaim)
	must(err)
	m := ledger.Mutation{Actor: "bench"}
	path := filepath.Join(dir, ledger.LedgerFile)
	for i := 0; ; i++ {
		fi, err := os.Stat(path)
		must(err)
		if fi.Size() >= b.CompactThreshold()/2 {
			return
		}
		id := cards[i%len(cards)].ID
		c, err := b.Claim(ctx, ledger.ClaimRequest{Mutation: m, ID: id, Owner: "settle", TTL: time.Hour})
		must(err)
		_, err = b.Heartbeat(ctx, ledger.HeartbeatRequest{Mutation: m, ID: id, Owner: "settle", Epoch: c.ClaimEpoch})
		must(err)
		_, err = b.Release(ctx, ledger.LeaseRequest{Mutation: m, ID: id, Owner: "settle", Epoch: c.ClaimEpoch})
		must(err)
	}
}

// human writes 1000000 as 1M and 100000 as 100k.
func human(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

func cardID(i int) string { return fmt.Sprintf("C%06d", i) }

// perCommand measures the hot commands on one backlog.
func perCommand(bl, dir, label string, floor time.Duration, limit float64) {
	target := fmt.Sprintf("≤ %.0f× floor", limit)
	create := median(*runs, func(i int) time.Duration {
		return timeCmd(bl, dir, "create", "--title", "bench "+strconv.Itoa(i))
	})
	add(fmt.Sprintf("bl create (%s)", label), ratio(create, floor), target, verdict(float64(create) <= limit*float64(floor)))
	var claimed []string
	var rss int64
	claim := median(*runs, func(int) time.Duration {
		start := time.Now()
		out, r := runCmd(bl, dir, "claim", "--owner", "bench", "--ttl", "1h", "--json")
		d := time.Since(start)
		var c struct{ ID string }
		must(json.Unmarshal(out, &c))
		claimed = append(claimed, c.ID)
		rss = max(rss, r)
		return d
	})
	add(fmt.Sprintf("bl claim (%s)", label), ratio(claim, floor), target, verdict(float64(claim) <= limit*float64(floor)))
	hb := median(*runs, func(i int) time.Duration {
		return timeCmd(bl, dir, "heartbeat", "--id", claimed[i%len(claimed)], "--owner", "bench")
	})
	add(fmt.Sprintf("bl heartbeat (%s)", label), ratio(hb, floor), target, verdict(float64(hb) <= limit*float64(floor)))
	ready := median(*runs, func(int) time.Duration { return timeCmd(bl, dir, "ready", "--limit", "10") })
	readyTarget, readyOK := "", ""
	if limit == 3 {
		readyTarget, readyOK = "≤ 20 ms", verdict(ready <= 20*time.Millisecond)
	}
	add(fmt.Sprintf("bl ready --limit 10 (%s)", label), ms(ready), readyTarget, readyOK)
	// bl prime runs at every agent session start and context compaction.
	prime := median(*runs, func(int) time.Duration { return timeCmd(bl, dir, "prime", "--owner", "bench") })
	add(fmt.Sprintf("bl prime (%s)", label), ms(prime), "≤ 2× bl ready", verdict(prime <= 2*ready))
	list := median(min(*runs, 5), func(int) time.Duration { return timeCmd(bl, dir, "list", "--json") })
	add(fmt.Sprintf("bl list --json (%s)", label), ms(list), "", "")
	if limit == 3 {
		add(fmt.Sprintf("peak RSS of bl claim (%s)", label), fmt.Sprintf("%d MB", rss/1024), "≤ 150 MB", verdict(rss/1024 <= 150))
	}
}

// concurrentClaims runs n claimer processes at once against a backlog of
// cards, each claiming until nothing is left, and checks the ledger for
// double claims.
func concurrentClaims(bl, dir string, n int) {
	cards := 400
	if n >= 32 {
		cards = 1200
	}
	generate(dir, cards, cards)
	start := time.Now()
	won, doubles := claimAll(bl, dir, n)
	d := time.Since(start)
	doubles += ledgerDoubleClaims(dir)
	if len(won) != cards {
		fmt.Fprintf(os.Stderr, "only %d of %d cards claimed\n", len(won), cards)
		doubles++
	}
	rate := float64(len(won)) / d.Seconds()
	target, ok := "", ""
	if n == 32 {
		target, ok = "≥ 500 claims/s, 0 double", verdict(rate >= 500 && doubles == 0)
	}
	add(fmt.Sprintf("%d concurrent claimer processes: claims/s (double claims)", n), fmt.Sprintf("%.0f/s (%d)", rate, doubles), target, ok)
}

// claimAll runs n claimer processes at once until nothing is claimable,
// and returns who won each card and how many cards two of them were told
// they won.
func claimAll(bl, dir string, n int) (won map[string]string, doubles int) {
	var mu sync.Mutex
	won = map[string]string{}
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%02d", w)
			for {
				out, _ := runCmd(bl, dir, "claim", "--owner", owner, "--ttl", "1h", "--json", "--lock-timeout", "60s")
				var c *struct{ ID string }
				must(json.Unmarshal(out, &c))
				if c == nil {
					return
				}
				mu.Lock()
				if prev, ok := won[c.ID]; ok {
					doubles++
					fmt.Fprintf(os.Stderr, "DOUBLE CLAIM: %s by %s and %s\n", c.ID, prev, owner)
				}
				won[c.ID] = owner
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return won, doubles
}

// ledgerDoubleClaims is the backlog's own view: one claim per card (every
// card had epoch 0), across the whole history, as automatic compactions
// ran meanwhile; it counts the claims beyond one and the conflicts.
func ledgerDoubleClaims(dir string) int {
	doubles := 0
	perCard := map[string]int{}
	b, err := ledger.Open(dir, ledger.Options{})
	must(err)
	_, err = b.History(ledger.HistoryFilter{Ops: []ledger.Op{ledger.OpClaim}}, func(e *ledger.Event, conflict *ledger.Conflict) error {
		if conflict != nil {
			fmt.Fprintf(os.Stderr, "CONFLICT: %s of %s: %s\n", e.Op, e.Card, conflict.Reason)
			doubles++
		}
		perCard[e.Card]++
		return nil
	})
	must(err)
	b.Close()
	for _, k := range perCard {
		if k > 1 {
			doubles += k - 1
		}
	}
	return doubles
}

// watchLatency appends events from this process and times how long a bl
// watch process takes to print each one.
func watchLatency(bl, dir string) {
	generate(dir, 10, 10)
	b, err := ledger.Open(dir, ledger.Options{})
	must(err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bl, "--dir", dir, "watch", "--json")
	stdout, err := cmd.StdoutPipe()
	must(err)
	must(cmd.Start())
	lines := make(chan time.Time, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- time.Now()
		}
		close(lines)
	}()
	time.Sleep(300 * time.Millisecond) // let the watcher start; not part of any figure
	var lat []time.Duration
	for i := range 200 {
		start := time.Now()
		_, _, err := b.Create(ctx, ledger.CreateRequest{Mutation: ledger.Mutation{Actor: "bench"}, Title: "w" + strconv.Itoa(i)})
		must(err)
		select {
		case at := <-lines:
			lat = append(lat, at.Sub(start))
		case <-time.After(5 * time.Second):
			fmt.Fprintln(os.Stderr, "watch did not deliver within 5s")
			lat = append(lat, 5*time.Second)
		}
		time.Sleep(5 * time.Millisecond)
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	add("bl watch latency, append started → line printed: p50 / p99", ms(p50)+" / "+ms(p99), "p99 ≤ 20 ms", verdict(p99 <= 20*time.Millisecond))
	cancel()
	_ = cmd.Wait()
}

func timeCmd(bl, dir string, args ...string) time.Duration {
	start := time.Now()
	runCmd(bl, dir, args...)
	return time.Since(start)
}

// runCmd runs bl on dir and returns its stdout and peak RSS in KiB.
func runCmd(bl, dir string, args ...string) ([]byte, int64) {
	cmd := exec.Command(bl, append([]string{"--dir", dir, "--actor", "bench"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "bl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		os.Exit(1)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return []byte(stdout.String()), rss
}

func median(n int, f func(i int) time.Duration) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = f(i)
	}
	slices.Sort(ds)
	return ds[n/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func ratio(d, floor time.Duration) string {
	return fmt.Sprintf("%s (%.1f×)", ms(d), float64(d)/float64(floor))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

func printReport(bl, built string) {
	var b strings.Builder
	fmt.Fprintf(&b, "| measurement | result | target | |\n|---|---|---|---|\n")
	for _, r := range report {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.what, r.value, r.target, r.verdict)
	}
	table := b.String()
	fmt.Print(table)
	if len(pairedRows) > 0 {
		fmt.Print("\n" + pairedTable(*before, bl) + gitPairedTables())
		if *rawOut != "" {
			writeRawSamples(*rawOut)
		}
	}
	if *out == "" {
		return
	}
	var doc strings.Builder
	doc.WriteString(beginMark + "\n")
	fmt.Fprintf(&doc, "Machine: %s, %d CPUs, %s, %s/%s; measured %s.\n\n", cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	if len(pairedRows) > 0 {
		// Its own block: a run of the paired part alone (-only paired)
		// leaves the other figures as they were.
		var p strings.Builder
		p.WriteString(pairedBegin + "\n")
		fmt.Fprintf(&p, "Machine: %s, %d CPUs, %s, %s/%s; measured %s.\n\n", cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
		p.WriteString("In each round the floor, bl before and bl after run one call each, in turn, each bl on its own copy of the same backlog; medians of " + strconv.Itoa(*pairedRuns) + " rounds (5 for list), after one untimed round. Targets are in wall time against the floor of the same run; CPU time is user + system.\n\n")
		p.WriteString(pairedTable(*before, bl))
		p.WriteString(gitPairedTables())
		p.WriteString(pairedEnd + "\n")
		replaceBlock(pairedBegin, pairedEnd, p.String())
	}
	if *only == "paired" {
		return
	}
	doc.WriteString(table)
	if goBench, err := os.ReadFile(filepath.Join(filepath.Dir(built), "bench-go.txt")); err == nil {
		doc.WriteString("\nLibrary benchmarks (`go test -bench . ./ledger/ ./ledger/internal/wire/`):\n\n```\n")
		for _, l := range strings.Split(string(goBench), "\n") {
			if strings.HasPrefix(l, "Benchmark") {
				doc.WriteString(l + "\n")
			}
		}
		doc.WriteString("```\n")
	}
	doc.WriteString(endMark + "\n")
	replaceBlock(beginMark, endMark, doc.String())
}

// replaceBlock replaces the lines from begin to end in -out with block
// (begin and end included), or adds block at the end; the prose around
// it stays.
func replaceBlock(begin, end, block string) {
	prev, err := os.ReadFile(*out)
	text := string(prev)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	switch {
	case err != nil:
		text = "# Performance\n\n" + block
	case i < 0 || j < i:
		text += "\n" + block
	default:
		text = text[:i] + block + text[j+len(end)+1:]
	}
	must(os.WriteFile(*out, []byte(text), 0o644))
}

const (
	beginMark   = "<!-- make bench: begin -->"
	endMark     = "<!-- make bench: end -->"
	pairedBegin = "<!-- make bench paired: begin -->"
	pairedEnd   = "<!-- make bench paired: end -->"
)

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "model name") {
			if _, v, ok := strings.Cut(l, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown CPU"
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}
