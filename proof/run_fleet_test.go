package proof

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestRunFleet runs a fleet of bl run --loop supervisors over one backlog
// while a chaos loop SIGKILLs some (a new supervisor takes the dead one's
// place) and SIGSTOPs others past their TTL. The checker judges the ledger
// they leave: no double claim, no overlapping leases, no event a fenced
// supervisor wrote late, every card completed exactly once. And every run
// of a card's command that the ledger counts as the completing one was by
// that lease's owner and epoch.
func TestRunFleet(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	const (
		cards       = 40
		supervisors = 6
		ttl         = "2s"
	)
	r := newBacklog(t, blBinary(t, tagsNone))
	var ids []string
	for i := range cards {
		id := fmt.Sprintf("R%02d", i)
		ids = append(ids, id)
		if c := r.run("setup", runOpts{}, "create", "--id", id, "--title", "card "+id, "--json"); c.Exit != 0 {
			t.Fatalf("create: %s", c.Stderr)
		}
	}
	runs := filepath.Join(filepath.Dir(r.dir), "runs")
	// Each run of the command records the card, epoch and owner it was
	// given, then works for a while.
	work := `echo "$BL_CARD $BL_EPOCH $BL_OWNER" >> ` + runs + `; sleep 1`

	var mu sync.Mutex
	procs := map[int]*exec.Cmd{}
	start := func(k, gen int) {
		cmd := exec.Command(r.bin, "run", "--dir", r.dir, "--owner", fmt.Sprintf("w%d.%d", k, gen), "--ttl", ttl,
			"--grace", "500ms", "--loop", "--wait", "4s", "--", "sh", "-c", work)
		cmd.Env = blEnv()
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		procs[k] = cmd
		mu.Unlock()
	}
	for k := range supervisors {
		start(k, 0)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	kills, stops := 0, 0
	deadline := time.Now().Add(patience(t))
	for gen := 1; time.Now().Before(deadline); gen++ {
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		if done := countOp(t, r.dir, "complete"); done >= cards {
			break
		}
		k := rng.IntN(supervisors)
		mu.Lock()
		cmd := procs[k]
		mu.Unlock()
		switch rng.IntN(3) {
		case 0: // killed mid-card: a new supervisor takes its place
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			kills++
			start(k, gen)
		case 1: // stopped past its TTL, then continued
			_ = cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(2500 * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGCONT)
			stops++
		}
	}
	// Let the supervisors drain what is left and exit on their own.
	mu.Lock()
	left := make([]*exec.Cmd, 0, len(procs))
	for _, c := range procs {
		left = append(left, c)
	}
	mu.Unlock()
	for _, c := range left {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(patience(t)):
			_ = c.Process.Signal(syscall.SIGKILL)
			<-done
		}
	}
	data, err := os.ReadFile(filepath.Join(r.dir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	finished := countOp(t, r.dir, "complete") == cards
	rep := Check(History{Ledger: data, Cards: ids, AllDone: finished})
	t.Logf("bl run fleet: %d supervisors, %d cards, %d kills, %d stops, finished=%v, %s", supervisors, cards, kills, stops, finished, rep.Summary())
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	if !finished {
		t.Errorf("the fleet did not complete all %d cards", cards)
	}

	// Every completion was by the lease whose command ran: the run file
	// holds a run of that card at that epoch by that owner.
	ran := map[string]bool{}
	f, err := os.Open(runs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ran[sc.Text()] = true
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"op":"complete"`)) {
			continue
		}
		card, epoch, owner := jsonField(line, "card"), jsonField(line, "epoch"), jsonField(line, "owner")
		if !ran[card+" "+epoch+" "+owner] {
			t.Errorf("%s was completed at epoch %s by %s, whose command never ran", card, epoch, owner)
		}
	}
}

// countOp counts the ledger's events of one op.
func countOp(t *testing.T, dir, op string) int {
	data, err := os.ReadFile(filepath.Join(dir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte(`"op":"`+op+`"`))
}

// jsonField reads a string or number member of a ledger line, enough for
// the ids, owners and epochs this test writes.
func jsonField(line []byte, name string) string {
	s := string(line)
	i := strings.Index(s, `"`+name+`":`)
	if i < 0 {
		return ""
	}
	s = s[i+len(name)+3:]
	if strings.HasPrefix(s, `"`) {
		s = s[1:]
		return s[:strings.IndexByte(s, '"')]
	}
	return s[:strings.IndexAny(s, ",}")]
}
