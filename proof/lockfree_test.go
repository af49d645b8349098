package proof

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// lockfreeLoad is one run of TestLockFreeReaders: writer processes at full
// speed, and beside them the commands that read without the lock.
type lockfreeLoad struct {
	Writers int // writer loops, each Rounds × (create, claim --id)
	Rounds  int
	Readers int   // reader loops, each running lockfreeReads in turn
	Compact int64 // compact_bytes; -1 keeps every event in ledger.jsonl
}

// lockfreeReads are the reads a reader loop runs in turn. Each must exit 0
// and, for bl doctor, report no damage and nothing to repair: a line an
// append is still writing is not damage. bl list and bl log must show
// every card whose creation was acknowledged before they started.
var lockfreeReads = [][]string{
	{"ready", "--json"},
	{"show", "SEED", "--json"},
	{"list", "--json"},
	{"doctor"},
	{"log", "--json"},
	{"doctor", "--json"},
	{"stats", "--json"},
}

// TestLockFreeReaders runs bl writers at full speed while readers without
// the lock run in a loop and two followers (bl watch, bl log --follow)
// stream every event; a bl claim --wait takes cards as they come. A read
// can meet a line whose bytes are still landing, or (with a small
// compact_bytes) a snapshot, ledger and archive a compaction is replacing.
// No reader may exit non-zero or report damage, and each follower must see
// every event of the final history exactly once.
func TestLockFreeReaders(t *testing.T) {
	loads := map[string]lockfreeLoad{
		"appends":    {Writers: 3, Rounds: 25, Readers: 2, Compact: -1},
		"compacting": {Writers: 3, Rounds: 25, Readers: 2, Compact: 4096},
	}
	if stress() {
		loads = map[string]lockfreeLoad{
			"appends":    {Writers: 8, Rounds: 100, Readers: 6, Compact: -1},
			"compacting": {Writers: 8, Rounds: 40, Readers: 6, Compact: 4096},
		}
	}
	bin := blBinary(t, tagsNone)
	for name, load := range loads {
		t.Run(name, func(t *testing.T) { load.run(t, bin) })
	}
}

func (load lockfreeLoad) run(t *testing.T, bin string) {
	r := newBacklog(t, bin)
	setCompactBytes(t, r.dir, load.Compact)
	seed := r.mustRun(t, "create", "--id", "SEED", "--title", "seed", "--json")
	_ = seed
	from := lastCursor(t, r)

	followers := []*follower{
		startFollower(t, r, "watch", "--json", "--from", from),
		startFollower(t, r, "log", "--follow", "--json", "--from", from),
	}

	var failed atomic.Int64
	fail := func(format string, args ...any) {
		if failed.Add(1) <= 20 {
			t.Errorf(format, args...)
		}
	}
	var ackMu sync.Mutex
	var acked []string // cards whose creation was acknowledged, in order
	ack := func(c Call) {
		if c.Exit == 0 && c.Args[0] == "create" {
			ackMu.Lock()
			acked = append(acked, c.Args[2])
			ackMu.Unlock()
		}
	}
	check := func(c Call) {
		ack(c)
		if c.Exit != 0 {
			fail("bl %s: exit %d: %s%s", strings.Join(c.Args, " "), c.Exit, c.Stderr, c.Stdout)
			return
		}
		if c.Args[0] == "doctor" {
			if msg := doctorComplaint(c); msg != "" {
				fail("bl %s during appends: %s\n%s", strings.Join(c.Args, " "), msg, c.Stdout)
			}
		}
	}

	waitCards := load.Rounds // cards with label "wait", created by writer 0
	var writers, waiter sync.WaitGroup
	for w := range load.Writers {
		writers.Add(1)
		go func() {
			defer writers.Done()
			owner := fmt.Sprintf("w%d", w)
			for i := range load.Rounds {
				id := fmt.Sprintf("%s-%d", owner, i)
				// A long body makes a line span pages, which land one by
				// one: a reader meets more lines still being written.
				body := strings.Repeat("x", (i*4099+w*1237)%20000)
				check(r.run(owner, runOpts{}, "create", "--id", id, "--title", "card "+id, "--body", body, "--assignee", owner, "--json"))
				check(r.run(owner, runOpts{}, "claim", "--owner", owner, "--id", id, "--ttl", "1h", "--json"))
				if w == 0 {
					check(r.run(owner, runOpts{}, "create", "--id", fmt.Sprintf("wait-%d", i), "--title", "for the waiter", "--label", "wait", "--json"))
				}
			}
		}()
	}
	waiter.Add(1)
	go func() {
		defer waiter.Done()
		for range waitCards {
			c := r.run("waiter", runOpts{}, "claim", "--owner", "waiter", "--label", "wait", "--wait", "1h", "--ttl", "1h", "--json")
			check(c)
			if bytes.Equal(bytes.TrimSpace(c.Stdout), []byte("null")) {
				fail("bl claim --wait returned nothing while cards were coming")
			}
		}
	}()
	writing := make(chan struct{})
	go func() { writers.Wait(); waiter.Wait(); close(writing) }()
	var readers sync.WaitGroup
	var reads atomic.Int64
	for i := range load.Readers {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for n := i; ; n++ {
				select {
				case <-writing:
					return
				default:
				}
				ackMu.Lock()
				before := acked[:len(acked):len(acked)]
				ackMu.Unlock()
				c := r.run("reader", runOpts{}, lockfreeReads[n%len(lockfreeReads)]...)
				check(c)
				if missing := missingCards(c, before); c.Exit == 0 && missing != "" {
					fail("bl %s during writes: %s", strings.Join(c.Args, " "), missing)
				}
				reads.Add(1)
			}
		}()
	}
	readers.Wait()
	<-writing
	r.mustRun(t, "create", "--id", "END", "--title", "the last card")

	want := historyIDs(t, r, from)
	for _, f := range followers {
		got := f.wait(t)
		if d := exactlyOnce(got, want); d != "" {
			t.Errorf("bl %s: %s", strings.Join(f.args, " "), d)
		}
	}
	if c := r.mustRun(t, "doctor", "--json"); doctorComplaint(c) != "" {
		t.Errorf("bl doctor after the run: %s\n%s", doctorComplaint(c), c.Stdout)
	}
	segs, _ := filepath.Glob(filepath.Join(r.dir, "archive", "*"))
	t.Logf("%s: %d events, %d reads, %d archive segments", strings.TrimPrefix(t.Name(), "TestLockFreeReaders/"), len(want), reads.Load(), len(segs))
	if load.Compact > 0 && len(segs) == 0 {
		t.Errorf("no compaction ran with compact_bytes %d", load.Compact)
	}
}

// doctorComplaint is what a bl doctor call reports that it must not while
// the backlog is only being appended to: damage, a torn tail, advice to
// repair. "" when it reports none.
func doctorComplaint(c Call) string {
	if bytes.HasPrefix(bytes.TrimSpace(c.Stdout), []byte("{")) {
		var rep struct {
			Corrupt  bool            `json:"corrupt"`
			TornTail json.RawMessage `json:"torn_tail"`
			Damage   []any           `json:"damage"`
			Stale    []any           `json:"stale"`
		}
		if err := json.Unmarshal(c.Stdout, &rep); err != nil {
			return err.Error()
		}
		var torn struct {
			Growing bool `json:"growing"`
		}
		_ = json.Unmarshal(rep.TornTail, &torn)
		switch {
		case rep.Corrupt || len(rep.Damage) > 0:
			return "damage"
		case len(rep.TornTail) > 0 && string(rep.TornTail) != "null" && !torn.Growing:
			return "a torn tail"
		case len(rep.Stale) > 0:
			return "stale files"
		}
		return ""
	}
	for _, bad := range []string{"DAMAGE", "torn tail", "--repair", "stale "} {
		if bytes.Contains(c.Stdout, []byte(bad)) {
			return fmt.Sprintf("%q in the report", bad)
		}
	}
	return ""
}

// missingCards names the cards of acked that the output of bl list --json
// or bl log --json lacks; "" when it shows them all (or c is another read).
func missingCards(c Call, acked []string) string {
	if len(c.Args) != 2 || c.Args[1] != "--json" || (c.Args[0] != "list" && c.Args[0] != "log") {
		return ""
	}
	var items []struct {
		ID   string `json:"id"`
		Card string `json:"card"`
	}
	if err := json.Unmarshal(c.Stdout, &items); err != nil {
		return err.Error()
	}
	shown := map[string]bool{}
	for _, it := range items {
		if c.Args[0] == "log" {
			shown[it.Card] = true
		} else {
			shown[it.ID] = true
		}
	}
	var missing []string
	for _, id := range acked {
		if !shown[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%d acknowledged cards missing: %v", len(missing), head(missing))
	}
	return ""
}

func setCompactBytes(t *testing.T, dir string, n int64) {
	t.Helper()
	path := filepath.Join(dir, ledger.ConfigFile)
	cfg := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &cfg)
	}
	cfg["compact_bytes"] = n
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// followedEvent is the part of a bl log or bl watch event the test reads.
type followedEvent struct {
	Cursor string `json:"cursor"`
	ID     string `json:"id"`
	Card   string `json:"card"`
}

func lastCursor(t *testing.T, r *runner) string {
	t.Helper()
	var evs []followedEvent
	if err := json.Unmarshal(r.mustRun(t, "log", "--json").Stdout, &evs); err != nil || len(evs) == 0 {
		t.Fatalf("bl log --json: %v (%d events)", err, len(evs))
	}
	return evs[len(evs)-1].Cursor
}

// historyIDs is the event ids after the cursor from, in the order bl log
// gives them.
func historyIDs(t *testing.T, r *runner, from string) []string {
	t.Helper()
	var evs []followedEvent
	if err := json.Unmarshal(r.mustRun(t, "log", "--json", "--from", from).Stdout, &evs); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}

// exactlyOnce says how got differs from want, each an ordered list of
// event ids: "" when got is want.
func exactlyOnce(got, want []string) string {
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	var dup, missing []string
	for id, n := range seen {
		if n > 1 {
			dup = append(dup, id)
		}
	}
	for _, id := range want {
		if seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	if len(dup) > 0 || len(missing) > 0 || len(got) != len(want) {
		return fmt.Sprintf("saw %d events, want %d: %d twice %v, %d missing %v", len(got), len(want), len(dup), head(dup), len(missing), head(missing))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("event %d is %s, want %s: out of order", i, got[i], want[i])
		}
	}
	return ""
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// follower is a bl process streaming events as JSON lines until it has
// shown the card END's creation.
type follower struct {
	args   []string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	ids    []string
	done   chan error
}

func startFollower(t *testing.T, r *runner, args ...string) *follower {
	t.Helper()
	f := &follower{args: args, done: make(chan error, 1)}
	f.cmd = exec.Command(r.bin, append(append([]string(nil), args...), "--dir", r.dir)...)
	f.cmd.Env = blEnv()
	f.cmd.Stderr = &f.stderr
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e followedEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				f.done <- fmt.Errorf("%v: %q", err, sc.Bytes())
				return
			}
			f.ids = append(f.ids, e.ID)
			if e.Card == "END" {
				f.done <- nil
				return
			}
		}
		f.done <- fmt.Errorf("ended before the card END: %v", sc.Err())
	}()
	return f
}

// wait waits for the follower to show END, stops it and returns the event
// ids it showed.
func (f *follower) wait(t *testing.T) []string {
	t.Helper()
	err := <-f.done
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	werr := f.cmd.Wait()
	if err != nil {
		t.Errorf("bl %s: %v (exit: %v)\n%s", strings.Join(f.args, " "), err, werr, f.stderr.Bytes())
	}
	return f.ids
}
