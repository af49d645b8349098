package proof

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// tornBench is one backlog whose ledger.jsonl the torn-write tests replace
// with damaged variants of a known history.
type tornBench struct {
	t     *testing.T
	r     *runner
	base  []byte   // the undamaged ledger
	lines [][]byte // its lines, newlines included
	lists map[int][]byte
	procs int
	n     int
	bad   int // errors reported
}

func (b *tornBench) errorf(format string, args ...any) {
	b.t.Helper()
	b.bad++
	b.t.Errorf(format, args...)
}

func newTornBench(t *testing.T) *tornBench {
	r := newBacklog(t, blBinary(t, tagsNone))
	for i, args := range [][]string{
		{"create", "--id", "A1", "--title", "schema", "--priority", "5"},
		{"create", "--id", "A2", "--title", "service", "--depends-on", "A1"},
		{"create", "--id", "A3", "--title", "docs", "--label", "writing"},
		{"claim", "--owner", "w1", "--ttl", "1h", "--id", "A1"},
		{"heartbeat", "--id", "A1", "--owner", "w1", "--epoch", "1", "--progress", "40"},
		{"create", "--id", "A4", "--title", "release notes", "--body", "what changed"},
		{"claim", "--owner", "w2", "--ttl", "1h", "--id", "A3"},
	} {
		r.mustRun(t, append(args, "--json", "--request-id", fmt.Sprintf("base-%d", i))...)
	}
	b := &tornBench{t: t, r: r, base: r.ledgerBytes(t), lists: map[int][]byte{}}
	b.lines = bytes.SplitAfter(b.base, []byte{'\n'})
	b.lines = b.lines[:len(b.lines)-1] // the empty piece after the last newline
	if len(b.lines) != 7 {
		t.Fatalf("base ledger has %d lines, want 7", len(b.lines))
	}
	return b
}

func (b *tornBench) ledgerPath() string { return filepath.Join(b.r.dir, ledger.LedgerFile) }
func (b *tornBench) brokenPath() string { return filepath.Join(b.r.dir, ledger.BrokenFile) }

// set replaces the ledger and removes any broken file.
func (b *tornBench) set(content []byte) {
	if err := os.WriteFile(b.ledgerPath(), content, 0o644); err != nil {
		b.t.Fatal(err)
	}
	if err := os.Remove(b.brokenPath()); err != nil && !os.IsNotExist(err) {
		b.t.Fatal(err)
	}
}

func (b *tornBench) run(args ...string) Call {
	b.procs++
	return b.r.run("torn", runOpts{}, args...)
}

// listOf is what `bl list --json` prints for the first n bytes of the base
// ledger (plus nothing after them).
func (b *tornBench) listOf(good []byte) []byte {
	if l, ok := b.lists[len(good)]; ok {
		return l
	}
	b.set(good)
	c := b.run("list", "--json")
	if c.Exit != 0 {
		b.t.Fatalf("list of a clean ledger: exit %d: %s", c.Exit, c.Stderr)
	}
	b.lists[len(good)] = c.Stdout
	return c.Stdout
}

// prefix is the base ledger's first n lines.
func (b *tornBench) prefix(n int) []byte {
	return bytes.Join(b.lines[:n], nil)
}

// torn checks a ledger that is good up to good and damaged after it, at
// the tail: reads succeed, see exactly the good lines and change nothing;
// the next write succeeds, appends one line after the good ones and moves
// the damaged tail, and only it, to ledger.jsonl.broken.
func (b *tornBench) torn(name string, good, tail []byte) {
	b.t.Helper()
	want := b.listOf(good)
	content := append(append([]byte(nil), good...), tail...)
	b.set(content)
	reads := [][]string{{"list", "--json"}}
	if b.n%10 == 0 {
		reads = append(reads, []string{"show", "A1", "--json"}, []string{"stats", "--json"}, []string{"ready", "--json"})
	}
	for _, args := range reads {
		c := b.run(args...)
		if c.Exit != 0 {
			b.errorf("%s: bl %s: exit %d, want 0: %s", name, args[0], c.Exit, c.Stderr)
		}
		if args[0] == "list" && !bytes.Equal(c.Stdout, want) {
			b.errorf("%s: bl list sees something other than the good lines:\n%s\nwant\n%s", name, c.Stdout, want)
		}
		if got, _ := os.ReadFile(b.ledgerPath()); !bytes.Equal(got, content) {
			b.errorf("%s: bl %s changed the ledger", name, args[0])
		}
	}
	b.n++
	id, rid := fmt.Sprintf("Z%d", b.n), fmt.Sprintf("torn-%d", b.n)
	c := b.run("create", "--id", id, "--title", "after damage", "--json", "--request-id", rid)
	if c.Exit != 0 {
		b.errorf("%s: the next write failed: exit %d: %s", name, c.Exit, c.Stderr)
		return
	}
	after, _ := os.ReadFile(b.ledgerPath())
	if !bytes.HasPrefix(after, good) {
		b.errorf("%s: the write changed the good lines", name)
		return
	}
	e, err := ledger.DecodeLine(after[len(good):])
	if err != nil || e.Op != ledger.OpCreate || e.Card != id || e.RequestID != rid || bytes.Count(after[len(good):], []byte{'\n'}) != 1 {
		b.errorf("%s: after the good lines the ledger holds %q, want just the new create of %s (%v)", name, after[len(good):], id, err)
	}
	broken, _ := os.ReadFile(b.brokenPath())
	wantBroken := append([]byte(nil), tail...)
	if !bytes.HasSuffix(wantBroken, []byte{'\n'}) {
		wantBroken = append(wantBroken, '\n')
	}
	if !bytes.Equal(broken, wantBroken) {
		b.errorf("%s: ledger.jsonl.broken holds %q, want the torn tail %q", name, broken, wantBroken)
	}
}

// corrupt checks a ledger damaged where recovery must not guess: every
// command, read or write, exits 6 with the given --json code, names the
// line, and leaves the ledger as it was.
func (b *tornBench) corrupt(name string, content []byte, line int, code string, cmds [][]string) {
	b.t.Helper()
	b.set(content)
	off := 0 // where the named line starts
	for i := 1; i < line; i++ {
		off += bytes.IndexByte(content[off:], '\n') + 1
	}
	for _, args := range cmds {
		c := b.run(append(args, "--json")...)
		var e struct {
			Error    string `json:"error"`
			Code     string `json:"code"`
			ExitCode int    `json:"exit_code"`
		}
		jerr := json.Unmarshal(c.Stderr, &e)
		switch {
		case c.Exit != 6:
			b.errorf("%s: bl %s: exit %d, want 6: %s", name, args[0], c.Exit, c.Stderr)
		case jerr != nil:
			b.errorf("%s: bl %s: stderr is not a JSON error: %q", name, args[0], c.Stderr)
		case e.Code != code || e.ExitCode != 6:
			b.errorf("%s: bl %s: code %q exit_code %d, want %q 6: %s", name, args[0], e.Code, e.ExitCode, code, e.Error)
		case !strings.Contains(e.Error, ledger.LedgerFile) || !strings.Contains(e.Error, fmt.Sprintf("line %d ", line)) ||
			!strings.Contains(e.Error, fmt.Sprintf("offset %d", off)):
			b.errorf("%s: bl %s: error does not name %s line %d at offset %d: %s", name, args[0], ledger.LedgerFile, line, off, e.Error)
		}
		if len(bytes.TrimSpace(c.Stdout)) != 0 {
			b.errorf("%s: bl %s printed %q on stdout", name, args[0], c.Stdout)
		}
		if got, _ := os.ReadFile(b.ledgerPath()); !bytes.Equal(got, content) {
			b.errorf("%s: bl %s changed the ledger", name, args[0])
		}
		if _, err := os.Stat(b.brokenPath()); err == nil {
			b.errorf("%s: bl %s set something aside", name, args[0])
		}
	}
}

// Every command on a corrupt ledger: reads and writes alike.
var allCmds = [][]string{
	{"list"}, {"show", "A2"}, {"stats"}, {"ready"},
	{"create", "--id", "Q1", "--title", "q", "--request-id", "q1"},
	{"claim", "--owner", "w9", "--ttl", "1m", "--request-id", "q2"},
	{"heartbeat", "--id", "A1", "--owner", "w1", "--epoch", "1", "--request-id", "q3"},
	{"complete", "--id", "A3", "--owner", "w2", "--epoch", "1", "--request-id", "q4"},
}

// A read and a write, for the many single-byte variants.
var someCmds = [][]string{{"list"}, {"create", "--id", "Q1", "--title", "q", "--request-id", "q1"}}

// lostNewline checks a ledger whose last line is complete and checksummed
// but lost its newline: reads see it as the event it is; the next write
// restores the newline, appends after it, and sets nothing aside.
// repeated checks a ledger holding one of its lines twice: reads see the
// base ledger, and the next write appends after every line.
func (b *tornBench) repeated(name string, content []byte) {
	b.t.Helper()
	want := b.listOf(b.base)
	b.set(content)
	if c := b.run("list", "--json"); c.Exit != 0 || !bytes.Equal(c.Stdout, want) {
		b.errorf("%s: bl list: exit %d, sees something other than the base ledger:\n%s\nwant\n%s", name, c.Exit, c.Stdout, want)
	}
	b.n++
	if c := b.run("create", "--id", fmt.Sprintf("Z%d", b.n), "--title", "after a repeated line", "--json"); c.Exit != 0 {
		b.errorf("%s: the next write failed: exit %d: %s", name, c.Exit, c.Stderr)
		return
	}
	if after, _ := os.ReadFile(b.ledgerPath()); !bytes.HasPrefix(after, content) {
		b.errorf("%s: the write rewrote the ledger:\n%q", name, after)
	}
}

func (b *tornBench) lostNewline(name string) {
	b.t.Helper()
	want := b.listOf(b.base)
	content := b.base[:len(b.base)-1]
	b.set(content)
	if c := b.run("list", "--json"); c.Exit != 0 || !bytes.Equal(c.Stdout, want) {
		b.errorf("%s: bl list: exit %d, sees something other than every line:\n%s\nwant\n%s", name, c.Exit, c.Stdout, want)
	}
	b.n++
	id := fmt.Sprintf("Z%d", b.n)
	c := b.run("create", "--id", id, "--title", "after a lost newline", "--json")
	if c.Exit != 0 {
		b.errorf("%s: the next write failed: exit %d: %s", name, c.Exit, c.Stderr)
		return
	}
	after, _ := os.ReadFile(b.ledgerPath())
	if !bytes.HasPrefix(after, b.base) {
		b.errorf("%s: the write did not keep every line, newline restored:\n%q", name, after)
		return
	}
	if e, err := ledger.DecodeLine(after[len(b.base):]); err != nil || e.Card != id {
		b.errorf("%s: after the restored newline the ledger holds %q (%v)", name, after[len(b.base):], err)
	}
	if _, err := os.Stat(b.brokenPath()); err == nil {
		b.errorf("%s: a complete event was set aside", name)
	}
}

// TestTornTail damages the end of a ledger the ways a crash mid-append
// does: every prefix of the last line, NULs, unterminated garbage. Reads
// must succeed and change nothing; the next write must set the damage aside
// and append. The whole last line without its newline is no damage at all.
func TestTornTail(t *testing.T) {
	start := time.Now()
	b := newTornBench(t)
	n := len(b.lines)
	last := b.lines[n-1]
	cases := 0

	// Every prefix of the last line, down to its first byte and up to the
	// line without its closing brace.
	for p := 1; p < len(last)-1; p++ {
		b.torn(fmt.Sprintf("last line cut to %d of %d bytes", p, len(last)), b.prefix(n-1), last[:p])
		cases++
	}
	b.lostNewline("the last line without its newline")
	cases++
	// NULs: after the last line, instead of it, and after part of it.
	for _, k := range []int{1, 7, 512, 4096} {
		b.torn(fmt.Sprintf("%d trailing NULs", k), b.base, make([]byte, k))
		cases++
	}
	b.torn("last line zeroed", b.prefix(n-1), make([]byte, len(last)))
	b.torn("last line zeroed with its newline", b.prefix(n-1), append(make([]byte, len(last)-1), '\n'))
	b.torn("half a line then NULs", b.prefix(n-1), append(append([]byte(nil), last[:len(last)/2]...), make([]byte, 300)...))
	b.torn("NULs then the rest of the line", b.prefix(n-1), append(make([]byte, len(last)/2), last[len(last)/2:]...))
	cases += 4
	// Garbage: without a line end, or with NULs in it.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 2, 33, 200, 5000} {
		g := make([]byte, k)
		for i := range g {
			if g[i] = byte(rng.IntN(256)); g[i] == '\n' {
				g[i] = 'x'
			}
		}
		b.torn(fmt.Sprintf("%d bytes of garbage", k), b.base, g)
		g[0] = 0
		b.torn(fmt.Sprintf("%d bytes of garbage with NULs and a newline", k), b.base, append(g, '\n'))
		cases += 2
	}
	b.torn("a damaged final line without its newline", b.prefix(n-1),
		bytes.Replace(last[:len(last)-1], []byte(`"op":"claim"`), []byte(`"op":"clbim"`), 1))
	cases++
	t.Logf("torn tails: cases=%d processes=%d violations=%d time=%s", cases, b.procs, b.bad, time.Since(start).Round(time.Millisecond))
}

// TestCorruptMidFile damages a ledger where a crash cannot: a flipped byte
// with good lines after it, a duplicated line, a line from a newer format.
// Every command must refuse with exit 6, name the line, and change nothing.
func TestCorruptMidFile(t *testing.T) {
	start := time.Now()
	b := newTornBench(t)
	n := len(b.lines)
	cases := 0

	// Every byte of line 2 flipped, newline included; a few bytes of the
	// first line and of the one before last.
	for _, target := range []struct{ line, every int }{{2, 1}, {1, 17}, {n - 1, 13}} {
		l := b.lines[target.line-1]
		off := len(b.prefix(target.line - 1))
		for i := 0; i < len(l); i += target.every {
			content := append([]byte(nil), b.base...)
			content[off+i] ^= 0x01
			cmds := someCmds
			if i == 0 {
				cmds = allCmds
			}
			b.corrupt(fmt.Sprintf("line %d byte %d flipped", target.line, i), content, target.line, "corrupt", cmds)
			cases++
		}
	}

	// A duplicated line: right after itself, at the end, and the last
	// line twice.
	dup := func(line, at int) []byte {
		var out []byte
		for i, l := range b.lines {
			out = append(out, l...)
			if i+1 == at {
				out = append(out, b.lines[line-1]...)
			}
		}
		return out
	}
	// A complete line that is not an event is damage even at the end:
	// only what cannot be a finished append is a torn tail.
	n0 := len(b.prefix(n - 1))
	edited := append(append([]byte(nil), b.prefix(n-1)...), bytes.Replace(b.lines[n-1], []byte(`"op":"claim"`), []byte(`"op":"clbim"`), 1)...)
	b.corrupt("a damaged final line", edited, n, "corrupt", allCmds)
	b.corrupt("two damaged lines at the end", append(append([]byte(nil), b.base...), "{\"v\":1,\"id\":\"x\"}\n{not json}\n"...), n+1, "corrupt", someCmds)
	b.corrupt("garbage and a newline at the end", append(append([]byte(nil), b.base...), "\x01garbage\xff\n"...), n+1, "corrupt", someCmds)
	b.corrupt("a blank last line", append(append([]byte(nil), b.base...), '\n'), n+1, "corrupt", someCmds)
	for i := 0; i < len(b.lines[n-1])-1; i += 11 {
		content := append([]byte(nil), b.base...)
		content[n0+i] ^= 0x01
		b.corrupt(fmt.Sprintf("last line byte %d flipped", i), content, n, "corrupt", someCmds)
		cases++
	}
	cases += 4

	// A repeated line is what a git union merge leaves: not damage. It
	// reads as the file without the repeat, and a write appends after
	// every line, rewriting none.
	for name, content := range map[string][]byte{"line 2 duplicated in place": dup(2, 2),
		"line 2 repeated at the end": dup(2, n), "last line duplicated": dup(n, n)} {
		b.repeated(name, content)
		cases++
	}

	// A line from a newer format, with a valid checksum: at the end and in
	// the middle.
	next, err := ledger.DecodeLine(b.lines[n-1])
	if err != nil {
		t.Fatal(err)
	}
	next.V, next.ID, next.At, next.RequestID = ledger.FormatVersion+1, "ffffffffffffffff", next.At.Add(time.Second), ""
	v2, err := ledger.EncodeLine(next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.DecodeLine(v2); err == nil {
		t.Fatalf("a v%d line decodes without error", next.V)
	}
	b.corrupt("newer format at the end", append(append([]byte(nil), b.base...), v2...), n+1, "unsupported_version", allCmds)
	mid := append(append(append([]byte(nil), b.prefix(2)...), v2...), bytes.Join(b.lines[2:], nil)...)
	b.corrupt("newer format in the middle", mid, 3, "unsupported_version", allCmds)
	cases += 2
	t.Logf("corrupt mid-file: cases=%d processes=%d violations=%d time=%s", cases, b.procs, b.bad, time.Since(start).Round(time.Millisecond))
}
