package proof

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// TestImportKilled: bl import of beads' own 2,393-issue file, killed
// (SIGKILL) after its first batch is durable, and at random moments, then
// run again, ends with exactly the cards of an import never stopped: no
// card twice, no note twice.
func TestImportKilled(t *testing.T) {
	src := beadsFixture(t)
	bl := blBinary(t, tagsFailpoints)
	run := func(dir string, env ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bl, "import", "--dir", filepath.Join(dir, ".backlog"), "--from", "beads", "--include-ephemeral", src)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = blEnv(append(env, "BL_ACTOR=importer")...)
		return cmd, &out
	}
	initDir := func() string {
		dir := t.TempDir()
		if out, err := exec.Command(bl, "init", "--dir", filepath.Join(dir, ".backlog")).CombinedOutput(); err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		return dir
	}
	whole := initDir()
	if cmd, out := run(whole); cmd.Run() != nil {
		t.Fatalf("import: %s", out)
	}
	want := importedCards(t, whole)

	// Killed exactly after the first batch is on disk.
	dir := initDir()
	cmd, out := run(dir, "BL_FAILPOINT=after-fsync")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("import with a failpoint: %v\n%s", err, out)
	}
	if got := importedCards(t, dir); len(got) == 0 || equalMaps(got, want) {
		t.Fatalf("after the kill: %d cards, the whole import's already: the kill came too late to test anything", len(got))
	}
	if cmd, out := run(dir); cmd.Run() != nil {
		t.Fatalf("import again: %s", out)
	}
	sameImport(t, dir, want)

	// Killed at random moments, run again until one finishes.
	dir = initDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	kills := 0
	for attempt := 0; ; attempt++ {
		cmd, out := run(dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if attempt < 4 {
			select {
			case <-time.After(time.Duration(rng.IntN(400)) * time.Millisecond):
				_ = cmd.Process.Kill()
				<-done
				kills++
				continue
			case err := <-done:
				if err != nil {
					t.Fatalf("import: %v\n%s", err, out)
				}
			}
		} else if err := <-done; err != nil {
			t.Fatalf("import: %v\n%s", err, out)
		}
		break
	}
	t.Logf("%d imports killed at random moments before one finished", kills)
	sameImport(t, dir, want)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

func beadsFixture(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "import", "beads", "issues-2393.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "issues.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// importedCards reads the backlog's cards by idempotency key, each
// rendered without the ledger's own stamps; a key held by two cards fails.
func importedCards(t *testing.T, dir string) map[string]string {
	b, err := ledger.Open(filepath.Join(dir, ".backlog"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cards, err := b.List(ledger.Filter{}, ledger.SortID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cards {
		if _, dup := out[c.IdempotencyKey]; dup {
			t.Fatalf("two cards from %s", c.IdempotencyKey)
		}
		c.CreatedAt, c.UpdatedAt, c.ClosedAt, c.Version = time.Time{}, time.Time{}, nil, 0
		for i := range c.Notes {
			c.Notes[i].At = time.Time{}
		}
		j, _ := json.Marshal(c)
		out[c.IdempotencyKey] = string(j)
	}
	return out
}

// sameImport: dir holds exactly the cards of want: a card made twice
// would show as a key held twice, a note written twice in the card's
// notes.
func sameImport(t *testing.T, dir string, want map[string]string) {
	got := importedCards(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d cards, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("card from %s differs:\n got %s\nwant %s", k, got[k], w)
		}
	}
}

// TestImport100k (BL_STRESS=1): bl import of 100,000 beads issues (beads'
// own 2,393-issue file, its live issues copied under new ids until there
// are 100,000) into a new backlog; logs the process's peak memory and
// holds it under 300 MB.
func TestImport100k(t *testing.T) {
	if !stress() {
		t.Skip("BL_STRESS=1 runs it")
	}
	path := beads100k(t)
	bl := blBinary(t, tagsNone)
	dir := t.TempDir()
	if out, err := exec.Command(bl, "init", "--dir", filepath.Join(dir, ".backlog")).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	import100k(t, bl, dir, path, "")
}

// TestImport100kResumed (BL_STRESS=1): the same import killed (kill -9)
// once its ledger holds about half of the issues, then run again: the run
// again finishes the import with no card twice, and its peak memory stays
// under 300 MB too (it read a copy of every card written before, and
// folded the files again beside its check's fold: 402 MiB).
func TestImport100kResumed(t *testing.T) {
	if !stress() {
		t.Skip("BL_STRESS=1 runs it")
	}
	path := beads100k(t)
	bl := blBinary(t, tagsNone)
	dir := t.TempDir()
	if out, err := exec.Command(bl, "init", "--dir", filepath.Join(dir, ".backlog")).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	cmd := exec.Command(bl, "import", "--dir", filepath.Join(dir, ".backlog"), "--from", "beads", "--include-ephemeral", path)
	cmd.Env = blEnv("BL_ACTOR=importer")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ledgerFile := filepath.Join(dir, ".backlog", "ledger.jsonl")
	for killed := false; !killed; {
		select {
		case err := <-done:
			t.Fatalf("the import ended (%v) before it was killed", err)
		case <-time.After(100 * time.Millisecond):
		}
		if fi, err := os.Stat(ledgerFile); err == nil && fi.Size() > 54<<20 { // about 48,000 issues
			_ = cmd.Process.Kill()
			<-done
			killed = true
		}
	}
	out := import100k(t, bl, dir, path, "resumed ")
	if !bytes.Contains(out, []byte("imported 100000: ")) || bytes.Contains(out, []byte(" 0 unchanged")) {
		t.Fatalf("the run again did not resume a killed import: %s", out)
	}
	b, err := ledger.Open(filepath.Join(dir, ".backlog"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	keys := make(map[string]bool, 100_000)
	err = b.ListEach(ledger.Filter{}, ledger.SortID, func(c *ledger.Card, _ ledger.Standing) error {
		if keys[c.IdempotencyKey] {
			t.Fatalf("two cards from %s", c.IdempotencyKey)
		}
		keys[c.IdempotencyKey] = true
		return nil
	})
	if err != nil || len(keys) != 100_000 {
		t.Fatalf("%d cards after the import run again, want 100000 (%v)", len(keys), err)
	}
}

// import100k runs bl import of path into dir, logs its time and peak
// memory and holds the peak under 300 MB; it returns the end of the
// import's report.
func import100k(t *testing.T, bl, dir, path, what string) []byte {
	cmd := exec.Command(bl, "import", "--dir", filepath.Join(dir, ".backlog"), "--from", "beads", "--include-ephemeral", path)
	cmd.Env = blEnv("BL_ACTOR=importer")
	report, err := os.Create(filepath.Join(t.TempDir(), "report"))
	if err != nil {
		t.Fatal(err)
	}
	defer report.Close()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = report, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("import: %v\n%s", err, out.Bytes())
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	t.Logf("100,000 issues %simported in %s (%s CPU), peak memory %d MiB", what, time.Since(start).Round(time.Millisecond), cpu.Round(time.Millisecond), rss>>10)
	if rss>>10 > 300 {
		t.Errorf("peak memory %d MiB, over 300 MiB", rss>>10)
	}
	fi, err := report.Stat()
	if err != nil {
		t.Fatal(err)
	}
	last := make([]byte, min(fi.Size(), 512))
	if _, err := report.ReadAt(last, fi.Size()-int64(len(last))); err != nil {
		t.Fatal(err)
	}
	return last
}

// beads100k writes 100,000 beads issues (beads' own 2,393-issue file, its
// live issues copied under new ids, references renamed with them) to a
// temp file and returns its path.
func beads100k(t *testing.T) string {
	var lines [][]byte
	data, err := os.ReadFile(beadsFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if !bytes.Contains(l, []byte(`"status":"tombstone"`)) {
			lines = append(lines, l)
		}
	}
	path := filepath.Join(t.TempDir(), "100k.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for n, copyNo := 0, 0; n < 100_000; copyNo++ {
		suffix := "-c" + strconv.Itoa(copyNo)
		for _, l := range lines {
			if n == 100_000 {
				break
			}
			var is map[string]any
			if err := json.Unmarshal(l, &is); err != nil {
				t.Fatal(err)
			}
			is["id"] = is["id"].(string) + suffix
			if p, ok := is["parent"].(string); ok && p != "" {
				is["parent"] = p + suffix
			}
			deps, _ := is["dependencies"].([]any)
			for _, d := range deps {
				dm := d.(map[string]any)
				dm["issue_id"] = dm["issue_id"].(string) + suffix
				dm["depends_on_id"] = dm["depends_on_id"].(string) + suffix
			}
			out, _ := json.Marshal(is)
			w.Write(out)
			w.WriteByte('\n')
			n++
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}
