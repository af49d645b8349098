package proof

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// crashIterations is how many writers TestCrash kills.
func crashIterations() int {
	if stress() {
		return 1500
	}
	return 125 // 25 of each kind
}

// The ways TestCrash kills a writer: at a named stage of the append path
// (BL_FAILPOINT), with SIGKILL from outside at a random moment, or at the
// write itself, leaving part of a line behind (torn-write: the writer is
// killed before its write and the bytes a cut-short write leaves, a prefix
// of a line with or without a run of NULs, are appended for it).
var crashKinds = []string{"before-write", "after-write", "after-fsync", "sigkill", "torn-write"}

// crashState is what the crash harness knows about the backlog between
// kills.
type crashState struct {
	t      *testing.T
	r      *runner
	calls  []Call
	acked  map[string]bool // request ids acknowledged with a card
	good   []byte          // the ledger's good lines as last checked
	broken []byte          // ledger.jsonl.broken as last checked

	holding string // card the crash owner holds, "" for none
	epoch   int64

	// counts for the summary
	landed   map[string]int // kills whose event is in the ledger anyway
	killed   map[string]int // writers that died, by kind
	finished map[string]int // writers that ran to the end anyway (nothing to write, or too quick)
	torn     int            // torn tails found after a kill
	setAside int            // bytes moved to ledger.jsonl.broken
}

const crashOwner = "crasher"

// TestCrash kills writers again and again, by failpoint at each stage of the
// append path and by SIGKILL at random moments, sometimes while another
// writer runs beside them. After every kill the backlog must open, every
// acknowledged event must still be in the ledger (whose good lines only ever
// grow), only a damaged tail may be set aside, and a retry of the killed
// request must succeed and leave its event exactly once.
func TestCrash(t *testing.T) {
	bin := blBinary(t, tagsFailpoints)
	s := &crashState{t: t, r: newBacklog(t, bin), acked: map[string]bool{},
		landed: map[string]int{}, killed: map[string]int{}, finished: map[string]int{}}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("BL_CRASH_SEED"), 10, 64); err == nil {
		seed = s // replay a failed run: its log names the seed
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	ids := &requestIDs{prefix: "c"}
	start := time.Now()

	n := crashIterations()
	for i := 0; i < n && !t.Failed(); i++ {
		kind := crashKinds[i%len(crashKinds)]
		args := s.nextOp(rng, i)
		rid := ids.next("victim")
		args = append(args, "--json", "--request-id", rid, "--actor", crashOwner)
		o := runOpts{}
		switch kind {
		case "sigkill":
			// Anywhere in the writer's few milliseconds of life.
			o = runOpts{fault: killFault, delay: time.Duration(rng.Int64N(int64(10 * time.Millisecond)))}
		case "torn-write":
			o.env = []string{"BL_FAILPOINT=before-write"}
		default:
			o.env = []string{"BL_FAILPOINT=" + kind}
		}

		// Half the time another writer appends beside the victim; it must
		// not be held up by a dead lock holder or lose its event.
		var wg sync.WaitGroup
		var side Call
		if rng.IntN(2) == 0 {
			srid := ids.next("side")
			wg.Add(1)
			go func() {
				defer wg.Done()
				side = s.r.run("side", runOpts{}, "create", "--title", "beside "+srid, "--json", "--request-id", srid, "--actor", "side")
			}()
		}
		victim := s.r.run("victim", o, args...)
		wg.Wait()
		s.calls = append(s.calls, victim)
		if side.Op != "" {
			s.calls = append(s.calls, side)
			if side.Exit != 0 {
				t.Errorf("iteration %d: a writer beside the killed one failed: exit %d: %s", i, side.Exit, side.Stderr)
			} else {
				s.acked[side.RequestID] = true
			}
		}

		tornLen := 0
		if kind == "torn-write" && victim.Killed() {
			tornLen = s.tear(rng)
		}
		if victim.Killed() {
			s.killed[kind]++
		} else {
			s.finished[kind]++
			if victim.Exit != 0 {
				t.Errorf("iteration %d: %v exited %d: %s", i, args, victim.Exit, victim.Stderr)
			}
		}
		s.afterKill(i, kind, victim, tornLen)
		s.retry(i, victim)
	}

	// The whole history, judged like a race run.
	r := Check(History{Calls: s.calls, Ledger: s.r.ledgerBytes(t)})
	for _, v := range r.Violations {
		t.Errorf("violation: %s", v)
	}
	t.Logf("crash: iterations=%d seed=%d killed=%v ran-through=%v killed-but-landed=%v torn-tails=%d set-aside-bytes=%d %s time=%s",
		n, seed, s.killed, s.finished, s.landed, s.torn, s.setAside, r.Summary(), time.Since(start).Round(time.Millisecond))
	for _, kind := range crashKinds {
		if s.killed[kind] == 0 {
			t.Errorf("no writer was killed by %s", kind)
		}
	}
}

// nextOp picks the victim's mutation from what the crash owner holds.
func (s *crashState) nextOp(rng *rand.Rand, i int) []string {
	if s.holding != "" {
		ep := strconv.FormatInt(s.epoch, 10)
		switch x := rng.IntN(10); {
		case x < 4:
			return []string{"heartbeat", "--id", s.holding, "--owner", crashOwner, "--epoch", ep}
		case x < 8:
			return []string{"complete", "--id", s.holding, "--owner", crashOwner, "--epoch", ep}
		default:
			return []string{"release", "--id", s.holding, "--owner", crashOwner, "--epoch", ep}
		}
	}
	if rng.IntN(2) == 0 {
		return []string{"create", "--title", fmt.Sprintf("card %d", i), "--priority", strconv.Itoa(rng.IntN(3))}
	}
	return []string{"claim", "--owner", crashOwner, "--ttl", "1h"}
}

// files reads the ledger and the broken file.
func (s *crashState) files() (ledgerBytes, broken []byte) {
	ledgerBytes = s.r.ledgerBytes(s.t)
	broken, err := os.ReadFile(filepath.Join(s.r.dir, ledger.BrokenFile))
	if err != nil && !os.IsNotExist(err) {
		s.t.Fatal(err)
	}
	return ledgerBytes, broken
}

// tear appends what a write cut short leaves: a prefix of a line, perhaps
// followed by a run of NULs where the file was extended but never written.
// It returns how many bytes it appended.
func (s *crashState) tear(rng *rand.Rand) int {
	title := "a card whose line was cut short"
	line, err := ledger.EncodeLine(&ledger.Event{V: ledger.FormatVersion, ID: fmt.Sprintf("%016x", rng.Uint64()),
		At: time.Now().UTC(), Actor: crashOwner, Op: ledger.OpCreate, Card: fmt.Sprintf("T%d", rng.Uint32()),
		Fields: &ledger.Fields{Title: &title}})
	if err != nil {
		s.t.Fatal(err)
	}
	// Never the whole line, with or without its newline: a complete line
	// that only lost its newline is an event by the framing rule, and the
	// next writer keeps it (see TestLostFinalNewline); a tear cuts inside.
	tail := line[:1+rng.IntN(len(line)-2)]
	if rng.IntN(2) == 0 {
		tail = append(tail, make([]byte, 1+rng.IntN(4096))...)
	}
	f, err := os.OpenFile(filepath.Join(s.r.dir, ledger.LedgerFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(tail); err != nil {
		s.t.Fatal(err)
	}
	return len(tail)
}

// afterKill checks the backlog right after a writer died.
func (s *crashState) afterKill(i int, kind string, victim Call, tornLen int) {
	t := s.t
	list := s.r.run("check", runOpts{}, "list", "--json")
	s.calls = append(s.calls, list)
	if list.Exit != 0 {
		t.Fatalf("iteration %d (%s): the backlog does not open: bl list exit %d: %s", i, kind, list.Exit, list.Stderr)
	}
	cur, broken := s.files()
	good, damaged, torn := ParseLedger(cur)
	s.checkFiles(i, kind, cur, broken, good, damaged)
	if torn > 0 {
		s.torn++
	}
	if torn != tornLen {
		// Readers leave a torn tail where it is; only a writer sets it aside.
		t.Errorf("iteration %d (%s): the ledger ends in %d torn bytes, want %d", i, kind, torn, tornLen)
	}
	present := countRequest(good, victim.RequestID)
	if present > 1 {
		t.Errorf("iteration %d (%s): request %s is on %d lines", i, kind, victim.RequestID, present)
	}
	if victim.Killed() {
		if present == 1 {
			s.landed[kind]++
		}
		if kind == "before-write" && present != 0 {
			t.Errorf("iteration %d: killed before its write, yet request %s is in the ledger", i, victim.RequestID)
		}
		if (kind == "after-write" || kind == "after-fsync") && present != 1 {
			t.Errorf("iteration %d: killed %s, yet request %s is not in the ledger", i, kind, victim.RequestID)
		}
	}
}

// retry sends the victim's request again, as an agent that heard nothing
// back does: it must succeed and its event must be in the ledger once. A
// victim that ran to the end anyway got its answer and is not retried.
func (s *crashState) retry(i int, victim Call) {
	t := s.t
	if !victim.Killed() {
		if out, err := parseOut(victim.Stdout); err == nil && out != nil {
			s.acked[victim.RequestID] = true
			s.track(out)
		}
		return
	}
	before, _ := s.files()
	_, _, tornBefore := ParseLedger(before)
	tail := append([]byte(nil), before[len(before)-tornBefore:]...)
	_, brokenBefore := s.files()

	c := s.r.run("victim", runOpts{}, victim.Args...)
	s.calls = append(s.calls, c)
	if c.Exit != 0 {
		t.Fatalf("iteration %d: retry of %v after the kill failed: exit %d: %s", i, victim.Args, c.Exit, c.Stderr)
	}
	out, err := parseOut(c.Stdout)
	if err != nil {
		t.Fatalf("iteration %d: retry printed %q: %v", i, c.Stdout, err)
	}
	cur, broken := s.files()
	good, damaged, torn := ParseLedger(cur)
	s.checkFiles(i, "retry", cur, broken, good, damaged)
	if torn != 0 {
		t.Errorf("iteration %d: a successful write left a torn tail of %d bytes", i, torn)
	}
	// Exactly the torn tail, and nothing else, was set aside.
	if tornBefore > 0 {
		want := tail
		if !bytes.HasSuffix(want, []byte{'\n'}) {
			want = append(want, '\n')
		}
		if got := broken[len(brokenBefore):]; !bytes.Equal(got, want) {
			t.Errorf("iteration %d: the write set aside %q, want the torn tail %q", i, got, want)
		}
		s.setAside += len(broken) - len(brokenBefore)
	} else if len(broken) != len(brokenBefore) {
		t.Errorf("iteration %d: the write set aside %q with no torn tail to set aside", i, broken[len(brokenBefore):])
	}
	if out != nil {
		s.acked[c.RequestID] = true
		if n := countRequest(good, c.RequestID); n != 1 {
			t.Errorf("iteration %d: acknowledged request %s is on %d lines", i, c.RequestID, n)
		}
	}
	s.track(out)
}

// checkFiles checks the ledger and the broken file against what was last
// seen: good lines only grow, nothing acknowledged is missing, and only
// damage is ever set aside.
func (s *crashState) checkFiles(i int, when string, cur, broken []byte, good, damaged []LedgerLine) {
	t := s.t
	if !bytes.HasPrefix(cur, s.good) {
		t.Fatalf("iteration %d (%s): the ledger lost or changed lines it had: it no longer starts with the %d bytes of good lines seen before", i, when, len(s.good))
	}
	for _, l := range damaged {
		t.Errorf("iteration %d (%s): ledger line %d (offset %d) is damaged with good lines after it: %v", i, when, l.No, l.Offset, l.Err)
	}
	for rid := range s.acked {
		if countRequest(good, rid) != 1 {
			t.Errorf("iteration %d (%s): acknowledged request %s is on %d lines", i, when, rid, countRequest(good, rid))
		}
	}
	if !bytes.HasPrefix(broken, s.broken) {
		t.Fatalf("iteration %d (%s): ledger.jsonl.broken was rewritten, not appended to", i, when)
	}
	// What was set aside was never a good line of the ledger nor an
	// acknowledged event. (A tail cut short just before its newline does
	// decode once set aside with one; it was never acknowledged.)
	for _, line := range bytes.SplitAfter(broken[len(s.broken):], []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		if e, err := ledger.DecodeLine(line); err == nil && (s.acked[e.RequestID] || bytes.Contains(s.good, line)) {
			t.Errorf("iteration %d (%s): a good event was set aside: %s %s of %s (request %s)", i, when, e.ID, e.Op, e.Card, e.RequestID)
		}
	}
	n := 0
	for _, l := range good {
		n += len(l.Raw)
	}
	s.good, s.broken = append(s.good[:0], cur[:n]...), append(s.broken[:0], broken...)
}

// track follows what the crash owner holds from a mutation's answer.
func (s *crashState) track(out *outCard) {
	if out == nil {
		return
	}
	switch {
	case out.Status == "claimed" && out.ClaimOwner == crashOwner:
		s.holding, s.epoch = out.ID, out.ClaimEpoch
	case out.ID == s.holding:
		s.holding, s.epoch = "", 0
	}
}

func countRequest(lines []LedgerLine, rid string) int {
	n := 0
	for _, l := range lines {
		if l.Event.RequestID == rid {
			n++
		}
	}
	return n
}
