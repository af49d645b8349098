package proof

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// The git-native suite (gitnative_test.go, gitrace_test.go) runs bl and
// bl-git the way a team does: the system git binary, one bare remote, clones
// that never run bl init (only the clone that creates the backlog does; the
// others get its tracked .backlog/.gitattributes), plain git pull, rebase,
// cherry-pick and bl sync mixed. Every scenario ends in the same judgement
// (world.finish): no conflict markers in any .backlog file, bl doctor clean,
// every acknowledged event present exactly once, every event id on one
// line only, and every clone's bl export --format json the same bytes, also
// after each clone merged every other clone's branch in its own order.

var gitBins struct {
	once sync.Once
	err  error
}

// blGitBinary returns the path of the plain bl binary the other harnesses
// run, with bl-git built next to it (once per test binary), where bl looks
// for it when a command needs git.
func blGitBinary(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found on PATH")
	}
	bl := blBinary(t, tagsNone)
	gitBins.once.Do(func() {
		args := []string{"build", "-o", filepath.Join(filepath.Dir(bl), "bl-git"), "github.com/bl-backlog/bl/cmd/bl-git"}
		if out, err := exec.Command(goTool(), args...).CombinedOutput(); err != nil {
			gitBins.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if gitBins.err != nil {
		t.Fatal(gitBins.err)
	}
	return bl
}

// world is one bare remote and the clones of one scenario, with every bl
// call made in them and what each acknowledged.
type world struct {
	t      testing.TB
	root   string
	remote string
	bl     string
	env    []string
	rids   requestIDs

	mu     sync.Mutex
	calls  []Call
	acked  map[string]Call // request id -> the call that exited 0 with it
	clones []*clone
}

// How a clone exchanges its backlog.
type mode int

const (
	plainGit mode = iota // git add, commit, pull, push; never bl sync
	blSync               // bl sync --push / --pull
)

// clone is one git clone of the world's remote.
type clone struct {
	w    *world
	name string
	dir  string // the work tree
	mode mode
	// rebase: a plain-git clone that pulls with --rebase.
	rebase bool
}

// newWorld makes a bare remote and a git identity of its own (HOME points
// into the test's directory, so no global git or bl setting leaks in).
func newWorld(t testing.TB, name string) *world {
	t.Helper()
	w := &world{t: t, root: t.TempDir(), bl: blGitBinary(t), acked: map[string]Call{}}
	w.rids.prefix = name
	home := filepath.Join(w.root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	gitconfig := "[user]\n\tname = bl proof\n\temail = proof@example.com\n" +
		"[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[core]\n\tpager = cat\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	w.env = blEnv("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "LANG=C", "GIT_MERGE_AUTOEDIT=no")
	w.remote = filepath.Join(w.root, "remote.git")
	w.gitIn(w.root, "init", "-q", "--bare", w.remote)
	return w
}

// gitIn runs git in dir and fails the test unless it exits 0.
func (w *world) gitIn(dir string, args ...string) string {
	w.t.Helper()
	out, err := w.tryGit(dir, args...)
	if err != nil {
		w.t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), filepath.Base(dir), err, out)
	}
	return out
}

func (w *world) tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// seed makes the clone that creates the backlog: it alone runs bl init.
// config, when set, edits config.json before the first commit. The
// backlog is committed with plain git (git add .backlog) and pushed.
func (w *world) seed(name string, m mode, config func(map[string]any)) *clone {
	w.t.Helper()
	c := w.clone(name, m)
	c.mustBL("init")
	if config != nil {
		path := filepath.Join(c.dir, ".backlog", ledger.ConfigFile)
		cfg := map[string]any{}
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			w.t.Fatal(err)
		}
		config(cfg)
		b, _ = json.MarshalIndent(cfg, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	return c
}

// publishSeed commits the seed clone's backlog with plain git and pushes it.
func (c *clone) publishSeed() {
	c.w.t.Helper()
	c.git("add", ".backlog")
	c.git("commit", "-q", "-m", "backlog")
	c.git("push", "-q", "origin", "main")
	if out := c.git("ls-files", ".backlog/.gitattributes"); strings.TrimSpace(out) != ".backlog/.gitattributes" {
		c.w.t.Fatalf("%s: .backlog/.gitattributes is not tracked after git add .backlog", c.name)
	}
}

// clone clones the remote (extra are git clone options). It never runs
// bl init.
func (w *world) clone(name string, m mode, extra ...string) *clone {
	w.t.Helper()
	c := &clone{w: w, name: name, dir: filepath.Join(w.root, name), mode: m}
	args := append([]string{"clone", "-q"}, extra...)
	w.gitIn(w.root, append(args, w.remote, name)...)
	w.mu.Lock()
	w.clones = append(w.clones, c)
	w.mu.Unlock()
	return c
}

func (c *clone) git(args ...string) string {
	c.w.t.Helper()
	return c.w.gitIn(c.dir, args...)
}

func (c *clone) tryGit(args ...string) (string, error) { return c.w.tryGit(c.dir, args...) }

// bl runs bl in the clone's work tree (it finds .backlog itself) and
// records the call.
func (c *clone) bl(worker string, args ...string) Call {
	call := Call{Worker: worker, Args: args}
	describe(&call)
	cmd := exec.Command(c.w.bl, args...)
	cmd.Dir, cmd.Env = c.dir, c.w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	call.Start = time.Now()
	err := cmd.Run()
	call.End = time.Now()
	call.Stdout, call.Stderr = stdout.Bytes(), stderr.Bytes()
	switch {
	case cmd.ProcessState != nil:
		call.Exit = cmd.ProcessState.ExitCode()
	case err != nil:
		call.Exit, call.Stderr = 127, []byte(err.Error())
	}
	c.w.mu.Lock()
	c.w.calls = append(c.w.calls, call)
	if call.Exit == 0 && call.RequestID != "" {
		if _, ok := c.w.acked[call.RequestID]; !ok {
			c.w.acked[call.RequestID] = call
		}
	}
	c.w.mu.Unlock()
	return call
}

// mustBL runs bl and fails the test unless it exits 0.
func (c *clone) mustBL(args ...string) Call {
	c.w.t.Helper()
	call := c.bl(c.name, args...)
	if call.Exit != 0 {
		c.w.t.Fatalf("%s: bl %s: exit %d: %s%s", c.name, strings.Join(args, " "), call.Exit, call.Stdout, call.Stderr)
	}
	return call
}

// do runs a mutation under a fresh request id, so the event it appends
// can be found in every clone's log, and fails the test unless it exits 0.
func (c *clone) do(args ...string) Call {
	c.w.t.Helper()
	return c.mustBL(append(args, "--json", "--request-id", c.w.rids.next(c.name))...)
}

// tryDo is do that reports instead of failing, for goroutines.
func (c *clone) tryDo(args ...string) (Call, error) {
	call := c.bl(c.name, append(args, "--json", "--request-id", c.w.rids.next(c.name))...)
	if call.Exit != 0 {
		return call, fmt.Errorf("%s: bl %s: exit %d: %s", c.name, strings.Join(call.Args, " "), call.Exit, bytes.TrimSpace(call.Stderr))
	}
	return call, nil
}

// commit commits whatever bl changed under .backlog with plain git (also
// a snapshot or archive segment a write rebuilt). It reports whether there
// was anything to commit.
func (c *clone) commit(msg string) bool {
	c.w.t.Helper()
	c.git("add", "-A", ".backlog")
	if out := c.git("status", "--porcelain", "--", ".backlog"); strings.TrimSpace(out) == "" {
		return false
	}
	c.git("commit", "-q", "-m", msg)
	return true
}

// pull merges the remote's main in with plain git (or rebases onto it) and
// checks the result is a healthy backlog.
func (c *clone) pull() {
	c.w.t.Helper()
	mode := "--no-rebase"
	if c.rebase {
		mode = "--rebase"
	}
	if out, err := c.tryGit("pull", "-q", mode, "origin", "main"); err != nil {
		c.w.t.Fatalf("%s: git pull %s: %v\n%s%s", c.name, mode, err, out, c.markers())
	}
	c.healthy("after git pull " + mode)
}

// push pushes main with plain git; a rejected push pulls and tries again.
func (c *clone) push() {
	c.w.t.Helper()
	for i := 0; ; i++ {
		out, err := c.tryGit("push", "-q", "origin", "HEAD:main")
		if err == nil {
			return
		}
		if i == 20 || !rejected(out) {
			c.w.t.Fatalf("%s: git push: %v\n%s", c.name, err, out)
		}
		c.pull()
	}
}

// rejected reports whether git push said someone else pushed first.
func rejected(out string) bool {
	return strings.Contains(out, "rejected") || strings.Contains(out, "fetch first") ||
		strings.Contains(out, "non-fast-forward") || strings.Contains(out, "cannot lock ref")
}

// share is the plain-git round trip: commit, pull, push.
func (c *clone) share(msg string) {
	c.w.t.Helper()
	c.commit(msg)
	c.pull()
	c.push()
}

// syncPush runs bl sync --push, again when every round of it was rejected
// (exit 1, code remote: the local events stay and go with the next sync).
func (c *clone) syncPush() Call {
	c.w.t.Helper()
	var call Call
	for i := 0; i < 5; i++ {
		call = c.bl(c.name, "sync", "--push", "--json")
		if call.Exit == 0 {
			c.healthy("after bl sync --push")
			return call
		}
		if call.Exit != 1 || call.ErrorCode() != "remote" {
			break
		}
	}
	c.w.t.Fatalf("%s: bl sync --push: exit %d: %s", c.name, call.Exit, call.Stderr)
	return call
}

// markers returns the lines of git conflict markers in the clone's
// .backlog files, one "file:line: text" per line, or "".
func (c *clone) markers() string {
	var b strings.Builder
	root := filepath.Join(c.dir, ".backlog")
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cache" || rel == ".staging" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == ledger.LockFile {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			l := sc.Text()
			if strings.HasPrefix(l, "<<<<<<<") || strings.HasPrefix(l, ">>>>>>>") || strings.TrimRight(l, "\r") == "=======" || strings.HasPrefix(l, "||||||| ") {
				fmt.Fprintf(&b, "%s:%d: %.60s\n", rel, n, l)
			}
		}
		return nil
	})
	return b.String()
}

// doctorOut is the part of bl doctor --json the suite reads.
type doctorOut struct {
	Corrupt   bool             `json:"corrupt"`
	Damage    []ledger.Damage  `json:"damage"`
	Stale     []ledger.Damage  `json:"stale"`
	Conflicts []map[string]any `json:"conflicts"`
	CRLFLines int              `json:"crlf_lines"`
	Unsorted  int              `json:"unsorted_lines"`
	Repeated  int              `json:"repeated_lines"`
}

// healthy fails the test when the clone's backlog has conflict markers or
// bl doctor does not pass: exit 0, nothing corrupt, no damage but a stale
// snapshot (a union of two snapshots is stale by design and rebuilt by the
// next write).
func (c *clone) healthy(when string) doctorOut {
	c.w.t.Helper()
	if m := c.markers(); m != "" {
		c.w.t.Fatalf("%s %s: git conflict markers in .backlog:\n%s", c.name, when, m)
	}
	call := c.bl(c.name, "doctor", "--json")
	var d doctorOut
	if err := json.Unmarshal(call.Stdout, &d); err != nil || call.Exit != 0 || d.Corrupt {
		human := c.bl(c.name, "doctor")
		c.w.t.Fatalf("%s %s: bl doctor exit %d (%v):\n%s%s", c.name, when, call.Exit, err, human.Stdout, human.Stderr)
	}
	for _, dm := range d.Damage {
		c.w.t.Fatalf("%s %s: bl doctor reports damage: %s line %d: %s: %s", c.name, when, dm.File, dm.Line, dm.Kind, dm.Reason)
	}
	return d
}

// logEvent is one event of bl log --json.
type logEvent struct {
	ID        string          `json:"id"`
	At        time.Time       `json:"at"`
	Op        string          `json:"op"`
	Card      string          `json:"card"`
	RequestID string          `json:"request_id"`
	Owner     string          `json:"owner"`
	Epoch     int64           `json:"epoch"`
	Conflict  json.RawMessage `json:"conflict"`
}

// log reads the clone's whole history.
func (c *clone) log() []logEvent {
	c.w.t.Helper()
	call := c.mustBL("log", "--json")
	var evs []logEvent
	if err := json.Unmarshal(call.Stdout, &evs); err != nil {
		c.w.t.Fatalf("%s: bl log --json: %v", c.name, err)
	}
	return evs
}

// rawLine is one event line of a tracked file.
type rawLine struct {
	file string
	no   int
	body string // the line without its line end
	e    *ledger.Event
}

// rawEvents reads every event line of ledger.jsonl and archive/*.jsonl as
// the files hold them, union leftovers (repeats, any order) included.
func (c *clone) rawEvents() []rawLine {
	c.w.t.Helper()
	root := filepath.Join(c.dir, ".backlog")
	files := []string{ledger.LedgerFile}
	segs, _ := filepath.Glob(filepath.Join(root, ledger.ArchiveDir, "*.jsonl"))
	for _, s := range segs {
		rel, _ := filepath.Rel(root, s)
		files = append(files, rel)
	}
	var out []rawLine
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			c.w.t.Fatal(err)
		}
		for i, l := range bytes.Split(b, []byte("\n")) {
			body := bytes.TrimRight(l, "\r")
			if len(body) == 0 {
				continue
			}
			e, err := ledger.DecodeLine(append(append([]byte(nil), body...), '\n'))
			if err != nil {
				c.w.t.Fatalf("%s: %s line %d is not an event: %v: %.80s", c.name, f, i+1, err, body)
			}
			out = append(out, rawLine{file: f, no: i + 1, body: string(body), e: e})
		}
	}
	return out
}

// verdict is what one clone's final check found.
type verdict struct {
	export []byte
	ids    []string              // event ids, sorted
	byReq  map[string][]logEvent // by request id, ~N attempt suffix removed
	events []logEvent
}

// check judges one clone: conflict markers, doctor, every event id on one
// line content only and in the log once, every acknowledged request in the
// log exactly once, and no event in the log that no call of the scenario
// asked for (unless strayOK says it may be there).
func (w *world) check(c *clone, strayOK func(logEvent) bool) verdict {
	w.t.Helper()
	c.healthy("at the end")
	v := verdict{byReq: map[string][]logEvent{}}
	v.events = c.log()
	seen := map[string]int{}
	for _, e := range v.events {
		seen[e.ID]++
		if e.RequestID != "" {
			b := baseRequest(e.RequestID)
			v.byReq[b] = append(v.byReq[b], e)
		}
	}
	for id, n := range seen {
		if n != 1 {
			w.t.Errorf("%s: event %s is in bl log %d times", c.name, id, n)
		}
		v.ids = append(v.ids, id)
	}
	sort.Strings(v.ids)

	// Raw lines: one id, one event. A repeat is the same line; two
	// lines that differ only in their stamp (at, clock, v) are one event
	// re-stamped by bl sync, and the later stamp counts (ledger/doc.go);
	// anything else is two events under one id.
	first := map[string]rawLine{}
	latest := map[string]time.Time{}
	for _, l := range c.rawEvents() {
		if l.e.At.After(latest[l.e.ID]) {
			latest[l.e.ID] = l.e.At
		}
		p, ok := first[l.e.ID]
		if !ok {
			first[l.e.ID] = l
			continue
		}
		if p.body != l.body && !sameButStamp(p.e, l.e) {
			w.t.Errorf("%s: event %s (%s %s) is on two different lines: %s:%d and %s:%d:\n  %s\n  %s",
				c.name, l.e.ID, l.e.Op, l.e.Card, p.file, p.no, l.file, l.no, p.body, l.body)
		}
	}
	for _, e := range v.events {
		if at, ok := latest[e.ID]; ok && !e.At.Equal(at) {
			w.t.Errorf("%s: bl log shows event %s (%s %s) at %s, but its latest stamp in the files is %s",
				c.name, e.ID, e.Op, e.Card, e.At.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
		}
	}
	for id := range first {
		if seen[id] == 0 {
			w.t.Errorf("%s: event %s is in the files but not in bl log", c.name, id)
		}
	}
	for id := range seen {
		if _, ok := first[id]; !ok {
			w.t.Errorf("%s: event %s is in bl log but on no line of ledger.jsonl or archive/", c.name, id)
		}
	}

	// Acknowledged requests: each exactly once, as the op and card it
	// was. A request may leave more events, each refused by the fold: a
	// remote claim that lost a race to a card records its void attempt
	// (under the request id, or the id with a ~N suffix) and goes on.
	w.mu.Lock()
	acked := make(map[string]Call, len(w.acked))
	for rid, call := range w.acked {
		acked[rid] = call
	}
	w.mu.Unlock()
	for _, rid := range sortedKeys(acked) {
		call := acked[rid]
		out, _ := parseOut(call.Stdout)
		var match, other []logEvent
		for _, e := range v.byReq[rid] {
			if out != nil && e.Op == call.Op && e.Card == out.ID {
				match = append(match, e)
			} else if len(e.Conflict) == 0 {
				other = append(other, e)
			}
		}
		switch {
		case out == nil && call.Op == "claim":
			// A claim that found nothing changed nothing.
		case len(match) == 0:
			w.t.Errorf("%s: %s (request %s, acknowledged in %s at %s with %s) is not in the log",
				c.name, strings.Join(call.Args, " "), rid, call.Worker, call.End.Format("15:04:05.000"), bytes.TrimSpace(call.Stdout))
		case len(match) > 1:
			w.t.Errorf("%s: request %s (%s %s) is in the log %d times: %s", c.name, rid, call.Op, out.ID, len(match), describeEvents(match))
		}
		if len(other) > 0 {
			w.t.Errorf("%s: request %s (%s, acknowledged as %s) also left applied events: %s", c.name, rid, call.Op, bytes.TrimSpace(call.Stdout), describeEvents(other))
		}
	}
	for _, e := range v.events {
		if e.RequestID == "" || len(e.Conflict) > 0 || (strayOK != nil && strayOK(e)) {
			continue
		}
		if _, ok := acked[baseRequest(e.RequestID)]; !ok {
			w.t.Errorf("%s: the log holds %s %s (event %s, request %q) that no process was told succeeded", c.name, e.Op, e.Card, e.ID, e.RequestID)
		}
	}

	call := c.mustBL("export", "--format", "json")
	v.export = call.Stdout
	return v
}

// converge brings every clone to the remote's final state: each in turn
// publishes (plain git: commit, pull, push; bl sync clones: bl sync
// --push), then each pulls (git pull / bl sync --pull). Before that every
// clone's own branch is pushed aside, and after it every clone merges all
// the others' branches with plain git, each clone in its own order: those
// unions differ line by line and must read as the same backlog. finish
// then checks every clone and compares them.
func (w *world) finish(strayOK func(logEvent) bool) []verdict {
	w.t.Helper()
	for _, c := range w.clones {
		if c.mode == plainGit {
			c.commit("final")
		} else {
			c.mustBL("sync")
		}
		c.git("push", "-q", "origin", "HEAD:refs/heads/final/"+c.name)
	}
	for _, c := range w.clones {
		if c.mode == plainGit {
			c.pull()
			c.push()
		} else {
			c.syncPush()
		}
	}
	for _, c := range w.clones {
		if c.mode == plainGit {
			c.pull()
		} else {
			c.mustBL("sync", "--pull")
			c.healthy("after bl sync --pull")
		}
	}
	var vs []verdict
	for _, c := range w.clones {
		vs = append(vs, w.check(c, strayOK))
	}
	ref := w.clones[0]
	for i, c := range w.clones[1:] {
		if !bytes.Equal(vs[0].export, vs[i+1].export) {
			w.t.Errorf("%s and %s export different backlogs after converging:\n%s", ref.name, c.name, firstDiff(vs[0].export, vs[i+1].export))
		}
		if !slices.Equal(vs[0].ids, vs[i+1].ids) {
			w.t.Errorf("%s has %d events, %s has %d", ref.name, len(vs[0].ids), c.name, len(vs[i+1].ids))
		}
	}
	w.crossMerge(vs[0].export)
	return vs
}

// crossMerge has every clone merge, on a scratch branch made from its own
// final branch, every other clone's final branch with plain git, starting
// at a different clone each: each result is another textual union of the
// same events, and must export exactly want.
func (w *world) crossMerge(want []byte) {
	w.t.Helper()
	n := len(w.clones)
	for i, c := range w.clones {
		c.git("fetch", "-q", "origin", "refs/heads/final/*:refs/remotes/origin/final/*")
		c.git("checkout", "-q", "-b", "cross", "origin/final/"+c.name)
		for k := 1; k < n; k++ {
			o := w.clones[(i+k)%n]
			if out, err := c.tryGit("merge", "-q", "--no-edit", "origin/final/"+o.name); err != nil {
				w.t.Fatalf("%s: git merge of %s's branch: %v\n%s%s", c.name, o.name, err, out, c.markers())
			}
			c.healthy("after merging " + o.name + "'s branch")
		}
		got := c.mustBL("export", "--format", "json").Stdout
		if !bytes.Equal(got, want) {
			w.t.Errorf("%s: every clone's branch merged with plain git exports a different backlog than the converged one:\n%s", c.name, firstDiff(want, got))
		}
		// Back to main; whatever a read rebuilt stays out of it.
		c.git("checkout", "-q", "-f", "main")
		c.git("clean", "-q", "-f", "-d", ".backlog")
		c.git("branch", "-q", "-D", "cross")
	}
}

// sameButStamp reports whether two events differ at most in their stamp:
// at, clock and the line version they imply.
func sameButStamp(a, b *ledger.Event) bool {
	x, y := *a, *b
	x.At, y.At = time.Time{}, time.Time{}
	x.Clock, y.Clock = nil, nil
	x.V, y.V = 0, 0
	bx, errx := json.Marshal(&x)
	by, erry := json.Marshal(&y)
	return errx == nil && erry == nil && bytes.Equal(bx, by)
}

// baseRequest is the request id an event's request id was made from: a
// remote claim's later attempts carry the caller's id with a ~N suffix.
func baseRequest(rid string) string {
	if i := strings.LastIndexByte(rid, '~'); i > 0 {
		if _, err := strconv.Atoi(rid[i+1:]); err == nil {
			return rid[:i]
		}
	}
	return rid
}

// firstDiff describes the first line where a and b differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  - %s\n  + %s", i+1, x, y)
		}
	}
	return "(same lines)"
}

// card returns the card a mutation printed.
func (w *world) card(call Call) *outCard {
	w.t.Helper()
	out, err := parseOut(call.Stdout)
	if err != nil || out == nil {
		w.t.Fatalf("%s printed %q: %v", strings.Join(call.Args, " "), call.Stdout, err)
	}
	return out
}

// TestGitRevertCompaction: a git revert of a commit that compacted takes
// its archive segment out while a later commit's snapshot still counts its
// events. The backlog is stale, never unreadable: every command works
// from the events the files hold, says so, and bl doctor --repair ends in
// a backlog that opens. Then the same through a GitHub-style revert of a
// merged pull request, after main had a later bl write.
func TestGitRevertCompaction(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "revert")
	a := w.seed("a", blSync, nil)
	a.publishSeed()
	for i := 1; i <= 3; i++ {
		a.do("create", "--id", fmt.Sprintf("R%d", i), "--title", "compacted "+strconv.Itoa(i))
		a.mustBL("compact")
		a.mustBL("sync")
	}
	a.git("revert", "--no-edit", "HEAD~1")
	opens := func(when string, want ...string) {
		t.Helper()
		call := a.bl(a.name, "list", "--json")
		if call.Exit != 0 {
			t.Fatalf("%s: bl list: exit %d: %s", when, call.Exit, call.Stderr)
		}
		for _, id := range want {
			if !bytes.Contains(call.Stdout, []byte(`"id":"`+id+`"`)) && !bytes.Contains(call.Stdout, []byte(`"id": "`+id+`"`)) {
				t.Fatalf("%s: bl list lacks %s:\n%s", when, id, call.Stdout)
			}
		}
		a.healthy(when)
	}
	call := a.bl(a.name, "list")
	if call.Exit != 0 || !strings.Contains(string(call.Stderr), "git revert or reset") {
		t.Fatalf("bl list after git revert: exit %d, want 0 with a warning naming the revert: %s", call.Exit, call.Stderr)
	}
	opens("after git revert HEAD~1", "R1", "R3")
	a.do("create", "--id", "R4", "--title", "after the revert")
	if call := a.bl(a.name, "doctor", "--repair"); call.Exit != 0 {
		t.Fatalf("bl doctor --repair: exit %d: %s%s", call.Exit, call.Stdout, call.Stderr)
	}
	opens("after bl doctor --repair", "R1", "R3", "R4")
	a.mustBL("sync", "--push")

	// GitHub's "Revert" of a merged pull request: a revert of the merge
	// commit (-m 1), made once main has a later bl write.
	a.git("checkout", "-q", "-b", "feature")
	a.do("create", "--id", "F1", "--title", "on the branch")
	a.mustBL("compact")
	a.mustBL("sync")
	a.git("checkout", "-q", "main")
	a.git("merge", "-q", "--no-ff", "--no-edit", "feature")
	merge := strings.TrimSpace(a.git("rev-parse", "HEAD"))
	a.do("create", "--id", "M1", "--title", "main after the merge")
	a.mustBL("compact")
	a.mustBL("sync")
	a.git("revert", "--no-edit", "-m", "1", merge)
	opens("after reverting a merged pull request", "R1", "M1")
	if call := a.bl(a.name, "doctor", "--repair", "--json"); call.Exit != 0 {
		t.Fatalf("bl doctor --repair: exit %d: %s%s", call.Exit, call.Stdout, call.Stderr)
	}
	opens("after bl doctor --repair", "R1", "M1")
	a.do("create", "--id", "M2", "--title", "a write after")
	a.mustBL("sync", "--push")
	a.healthy("at the end")
}

// runAdvice runs, in the clone's work tree with sh, the commands a bl
// error prints after "run: ", the way a user pastes them, with bl on PATH.
func (c *clone) runAdvice(stderr []byte) string {
	c.w.t.Helper()
	msg := string(stderr)
	i := strings.Index(msg, "run: ")
	if i < 0 {
		c.w.t.Fatalf("%s: the error names no commands to run: %s", c.name, msg)
	}
	line := msg[i+len("run: "):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = c.dir
	cmd.Env = append(slices.Clone(c.w.env), "PATH="+filepath.Dir(c.w.bl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.w.t.Fatalf("%s: the printed advice failed when run as printed: %s\n%v\n%s", c.name, line, err, out)
	}
	return line
}

// TestGitDivergedAdvice: bl sync --push on a branch whose remote has code
// commits this clone lacks (and this clone has its own) stops as
// diverged. It must leave the working tree as it found it or committed —
// never half-rebased — and the commands it prints, run as printed, merge
// with git and push, after which every clone has every event.
func TestGitDivergedAdvice(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "diverged")
	a := w.seed("a", blSync, nil)
	a.do("create", "--id", "S1", "--title", "seeded")
	a.mustBL("compact")
	a.publishSeed()
	b := w.clone("b", blSync)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(b.dir, "code.go"), []byte("package code\n"), 0o644))
	b.git("add", "code.go")
	b.git("commit", "-q", "-m", "code on b")
	b.do("create", "--id", "B1", "--title", "from b")
	b.mustBL("compact")
	b.syncPush()

	must(os.WriteFile(filepath.Join(a.dir, "mine.go"), []byte("package mine\n"), 0o644))
	a.git("add", "mine.go")
	a.git("commit", "-q", "-m", "code on a")
	a.do("create", "--id", "A1", "--title", "from a")
	a.mustBL("compact") // a new segment and snapshot, not committed yet
	call := a.bl(a.name, "sync", "--push")
	if call.Exit != 1 || !strings.Contains(string(call.Stderr), "diverged") {
		t.Fatalf("bl sync --push: exit %d, want 1 diverged: %s", call.Exit, call.Stderr)
	}
	if st := a.git("status", "--porcelain", "--untracked-files=all", "--", ".backlog"); strings.TrimSpace(st) != "" {
		t.Fatalf("a diverged sync left .backlog changed and uncommitted:\n%s", st)
	}
	line := a.runAdvice(call.Stderr)
	t.Logf("advice: %s", line)
	a.healthy("after the advice")
	// b lacks a's code commit: its pull stops the same way, and its
	// advice works too.
	if call := b.bl(b.name, "sync", "--pull"); call.Exit != 0 {
		b.runAdvice(call.Stderr)
	}
	b.healthy("after the advice")
	for _, id := range []string{"S1", "B1", "A1"} {
		for _, x := range []*clone{a, b} {
			if call := x.bl(x.name, "show", id); call.Exit != 0 {
				t.Errorf("%s lacks %s after the advice was followed: %s", x.name, id, call.Stderr)
			}
		}
	}
	for _, f := range []string{"code.go", "mine.go"} {
		for _, x := range []*clone{a, b} {
			if _, err := os.Stat(filepath.Join(x.dir, f)); err != nil {
				t.Errorf("%s lacks %s after the advice: %v", x.name, f, err)
			}
		}
	}
}

// TestGitSparseClone: git sparse-checkout sets extensions.worktreeConfig,
// which go-git alone refuses. Every git-backed command works in such a
// clone once .backlog is in the sparse set; while it is not, bl init
// refuses to start a fresh backlog over the tracked one.
func TestGitSparseClone(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "sparse")
	a := w.seed("a", blSync, nil)
	if err := os.MkdirAll(filepath.Join(a.dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.dir, "src", "x.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.git("add", "src")
	a.do("create", "--id", "S1", "--title", "seeded")
	a.publishSeed()

	b := w.clone("b", blSync, "--no-checkout")
	b.git("sparse-checkout", "set", "src")
	b.git("checkout", "-q", "main")
	if call := b.bl(b.name, "init"); call.Exit != 4 || !strings.Contains(string(call.Stderr), "sparse-checkout add") {
		t.Fatalf("bl init with .backlog outside the sparse set: exit %d, want 4 naming git sparse-checkout add: %s%s", call.Exit, call.Stdout, call.Stderr)
	}
	if _, err := os.Stat(filepath.Join(b.dir, ".backlog")); err == nil {
		t.Fatal("bl init created .backlog over the tracked one")
	}
	b.git("sparse-checkout", "add", ".backlog")
	b.do("create", "--id", "B1", "--title", "from the sparse clone")
	b.syncPush()
	b.do("claim", "--id", "S1", "--owner", "b", "--ttl", "1h", "--remote", "origin")
	call := b.mustBL("diff", "HEAD~1", "HEAD")
	if !strings.Contains(string(call.Stdout), "B1") && !strings.Contains(string(call.Stdout), "S1") {
		t.Fatalf("bl diff in the sparse clone shows nothing:\n%s", call.Stdout)
	}
	a.mustBL("sync", "--pull")
	if call := a.bl(a.name, "show", "B1"); call.Exit != 0 {
		t.Fatalf("a lacks the sparse clone's card: %s", call.Stderr)
	}
	w.finish(nil)
}

// TestGitAutoCRLFConfig: a clone with core.autocrlf=true checks
// config.json out with CRLF line ends. bl sync must store it as git add
// would (LF), so that an LF clone's edit of config.json merges with plain
// git, and every bl command reads the config in either line end.
func TestGitAutoCRLFConfig(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "autocrlf")
	a := w.seed("a", plainGit, func(cfg map[string]any) {
		cfg["compact_bytes"] = 1 << 20
		cfg["retry_backoff"] = map[string]any{"initial": "30s", "max": "1h"}
	})
	a.do("create", "--id", "S1", "--title", "seeded")
	a.publishSeed()

	b := w.clone("b", blSync, "-c", "core.autocrlf=true")
	cfgPath := filepath.Join(b.dir, ".backlog", ledger.ConfigFile)
	if data, err := os.ReadFile(cfgPath); err != nil || !bytes.Contains(data, []byte("\r\n")) {
		t.Fatalf("the autocrlf clone's config.json has no CRLF (%v): %q", err, data)
	}
	b.do("create", "--id", "B1", "--title", "from the CRLF clone")
	b.syncPush()
	if blob := b.git("show", "HEAD:.backlog/"+ledger.ConfigFile); strings.Contains(blob, "\r") {
		t.Fatalf("bl sync committed config.json with CRLF line ends:\n%q", blob)
	}
	if st := b.git("status", "--porcelain", "--", ".backlog"); strings.TrimSpace(st) != "" {
		t.Fatalf("the CRLF clone's backlog shows changes after bl sync:\n%s", st)
	}

	// The LF clone edits config.json and merges b's sync with plain git.
	a.do("create", "--id", "A1", "--title", "from the LF clone")
	path := filepath.Join(a.dir, ".backlog", ledger.ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"30s"`), []byte(`"45s"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	a.share("a: edit config.json")
	b.mustBL("sync", "--pull")
	b.mustBL("list")
	if got, _ := os.ReadFile(cfgPath); !bytes.Contains(got, []byte(`"45s"`)) {
		t.Fatalf("the CRLF clone did not take the LF clone's config edit:\n%s", got)
	}
	// A config.json checked out with CRLF reads, in bl and bl-git.
	if err := os.WriteFile(path, bytes.ReplaceAll(bytes.Replace(data, []byte(`"30s"`), []byte(`"45s"`), 1), []byte("\n"), []byte("\r\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	a.mustBL("list")
	a.git("checkout", "--", ".backlog/"+ledger.ConfigFile)
	w.finish(nil)
}

// TestGitTwoBacklogs: two backlogs in one repository (.backlog in two
// subdirectories), each synced to the same branch from two clones. A
// commit of one backlog is not a divergence for the other: each sync
// --push brings the other's remote events in through its ledger, and
// nothing is lost or left uncommitted.
func TestGitTwoBacklogs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "two")
	a := w.clone("a", blSync)
	for _, d := range []string{"p", "q"} {
		a.mustBL("init", "--dir", d+"/.backlog")
		a.mustBL("--dir", d+"/.backlog", "create", "--id", strings.ToUpper(d)+"0", "--title", "seeded "+d)
	}
	a.git("add", "p", "q")
	a.git("commit", "-q", "-m", "two backlogs")
	a.git("push", "-q", "origin", "main")
	b := w.clone("b", blSync)
	ids := map[string][]string{"p": {"P0"}, "q": {"Q0"}}
	for r := 1; r <= 3; r++ {
		for _, x := range []*clone{a, b} {
			for _, d := range []string{"p", "q"} {
				id := fmt.Sprintf("%s%s%d", strings.ToUpper(d), strings.ToUpper(x.name), r)
				x.mustBL("--dir", d+"/.backlog", "create", "--id", id, "--title", "round "+strconv.Itoa(r))
				ids[d] = append(ids[d], id)
			}
			// Sync one backlog only: the other's event stays uncommitted.
			d := []string{"p", "q"}[(r+len(x.name))%2]
			call := x.bl(x.name, "--dir", d+"/.backlog", "sync", "--push")
			if call.Exit != 0 {
				t.Fatalf("round %d: %s: bl sync --push of %s: exit %d: %s", r, x.name, d, call.Exit, call.Stderr)
			}
		}
	}
	for _, x := range []*clone{a, b, a} {
		for _, d := range []string{"p", "q"} {
			if call := x.bl(x.name, "--dir", d+"/.backlog", "sync", "--push"); call.Exit != 0 {
				t.Fatalf("%s: final bl sync --push of %s: exit %d: %s", x.name, d, call.Exit, call.Stderr)
			}
		}
	}
	for _, x := range []*clone{a, b} {
		if st := x.git("status", "--porcelain", "--untracked-files=all"); strings.TrimSpace(st) != "" {
			t.Errorf("%s: the worktree is not clean after syncing both backlogs:\n%s", x.name, st)
		}
		for _, d := range []string{"p", "q"} {
			call := x.mustBL("--dir", d+"/.backlog", "list", "--json")
			for _, id := range ids[d] {
				if !bytes.Contains(call.Stdout, []byte(`"`+id+`"`)) {
					t.Errorf("%s: backlog %s lacks %s", x.name, d, id)
				}
			}
			if dc := x.bl(x.name, "--dir", d+"/.backlog", "doctor", "--json"); dc.Exit != 0 {
				t.Errorf("%s: bl doctor of %s: exit %d: %s", x.name, d, dc.Exit, dc.Stderr)
			}
		}
	}
}

// TestGitRebaseDropKeepsEvents: git rebase -i dropping a backlog commit
// does not drop its events, since the next commit's copy of the
// append-only ledger still holds them (docs/SYNC.md, Undo); the backlog
// stays healthy, bl log still shows them, and the undo is a bl command.
func TestGitRebaseDropKeepsEvents(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "rebasedrop")
	a := w.seed("a", blSync, nil)
	a.do("create", "--id", "S1", "--title", "seeded")
	a.publishSeed()
	cl := a.do("claim", "--id", "S1", "--owner", "w1", "--ttl", "1h")
	a.mustBL("sync", "-m", "claim")
	a.do("complete", "--id", "S1", "--owner", "w1", "--epoch", strconv.FormatInt(w.card(cl).ClaimEpoch, 10))
	a.mustBL("sync", "-m", "complete")
	// Drop the claim's commit: its line is in the next commit's ledger.
	cmd := exec.Command("git", "rebase", "-q", "-i", "HEAD~2")
	cmd.Dir = a.dir
	cmd.Env = append(slices.Clone(w.env), "GIT_SEQUENCE_EDITOR=sed -i -e 1s/^pick/drop/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The next commit's ledger holds the dropped line too: git may
		// stop on it; the union rule keeps both sides.
		a.git("add", ".backlog")
		cont := exec.Command("git", "-c", "core.editor=true", "rebase", "--continue")
		cont.Dir, cont.Env = a.dir, w.env
		if out2, err := cont.CombinedOutput(); err != nil {
			t.Fatalf("git rebase -i: %v\n%s\n%s", err, out, out2)
		}
	}
	if msg := a.git("log", "--format=%s", "-n", "3"); strings.Contains(msg, "claim\n") {
		t.Fatalf("the claim's commit is still there:\n%s", msg)
	}
	a.healthy("after git rebase -i dropped a commit")
	show := a.mustBL("show", "S1", "--json")
	if c := w.card(show); c.Status != "done" {
		t.Fatalf("S1 is %s after dropping the claim's commit, want done (its events stay)", c.Status)
	}
	// The undo is a bl command.
	a.do("reopen", "--id", "S1")
	a.mustBL("sync", "--push")
	a.healthy("after bl reopen")
}
