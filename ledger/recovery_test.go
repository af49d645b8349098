package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// recoveryFixture is a ledger of three events plus the line a fourth append
// would have written.
type recoveryFixture struct {
	good []byte // three complete events
	next []byte // a valid fourth line
}

func newRecoveryFixture(t *testing.T) recoveryFixture {
	t.Helper()
	e := newEnv(t)
	e.create("A")
	e.create("B")
	e.claim("A", "w1", time.Minute)
	good := e.bytes()
	e.appendsOne(OpHeartbeat, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}))
	all := e.bytes()
	return recoveryFixture{good: good, next: all[len(good):]}
}

// tornTails lists endings a crash mid-append can leave: bytes that cannot
// be a finished append (a prefix of a line, NULs, unterminated garbage).
func (f recoveryFixture) tornTails() map[string][]byte {
	tails := map[string][]byte{}
	// Every prefix short of the whole line without its newline, which is
	// a complete event (see TestLostFinalNewline).
	for k := 1; k < len(f.next)-1; k++ {
		tails[fmt.Sprintf("prefix-%03d", k)] = f.next[:k]
	}
	tails["nul-1"] = []byte{0}
	tails["nul-4096"] = make([]byte, 4096)
	tails["nul-line"] = append(make([]byte, 100), '\n')
	tails["nul-then-rest-of-line"] = append(make([]byte, 64), f.next[64:]...)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 8; i++ {
		g := make([]byte, 1+rng.IntN(300))
		for j := range g {
			if g[j] = byte(rng.UintN(256)); g[j] == '\n' {
				g[j] = 'x' // unterminated: a line with an end is not torn
			}
		}
		tails[fmt.Sprintf("garbage-%d", i)] = g
	}
	tails["bad-checksum-unterminated"] = f.damagedTails()["bad-checksum"][:len(f.next)-1]
	tails["line-then-prefix"] = append(append([]byte{}, f.next[:len(f.next)-1]...), f.next[:7]...)
	return tails
}

// damagedTails lists endings no crash leaves: complete lines (each with its
// line end) that are not events. Each is damage, even as the last line.
func (f recoveryFixture) damagedTails() map[string][]byte {
	tails := map[string][]byte{}
	badCRC := append([]byte{}, f.next...)
	d := &badCRC[len(badCRC)-4] // last crc digit
	if *d == '0' {
		*d = '1'
	} else {
		*d = '0'
	}
	tails["bad-checksum"] = badCRC
	tails["bad-checksum-crlf"] = append(badCRC[:len(badCRC)-1:len(badCRC)-1], '\r', '\n')
	flipped := append([]byte{}, f.next...)
	flipped[len(flipped)/2] ^= 0x01
	tails["flipped-byte"] = flipped
	tails["edited"] = bytes.Replace(f.next, []byte(`"op":"heartbeat"`), []byte(`"op":"heartbeaT"`), 1)
	tails["empty-line"] = []byte("\n")
	tails["garbage-lines"] = []byte("not json\n{\"v\":1}\nstill not\n")
	tails["garbage-line"] = []byte("garbage\n")
	return tails
}

// TestTornTail writes each damaged ending after three good events. Open
// succeeds with the three events and reports the tail; the next write sets
// the tail aside into .broken, truncates, appends, and the ledger then reads
// cleanly.
func TestTornTail(t *testing.T) {
	f := newRecoveryFixture(t)
	for name, tail := range f.tornTails() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.writeLedger(append(append([]byte{}, f.good...), tail...))
			var warned []string
			b, err := Open(e.dir, Options{Clock: e.clk.Now, Warn: func(msg string) { warned = append(warned, msg) }})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			tt := b.TornTail()
			if tt == nil {
				t.Fatal("TornTail() = nil")
			}
			if tt.Line != 4 || tt.Offset != int64(len(f.good)) || tt.Bytes != int64(len(tail)) || tt.Reason == "" {
				t.Fatalf("TornTail() = %+v, want line 4 offset %d bytes %d", tt, len(f.good), len(tail))
			}
			var events int64
			if err := b.view(func(s *fold.State, _ time.Time) error { events = s.Events(); return nil }); err != nil {
				t.Fatal(err)
			}
			if c, err := b.Get("A"); err != nil || c.Status != StatusClaimed || events != 3 {
				t.Fatalf("events %d, A = %+v, %v", events, c, err)
			}
			other, err := Open(e.dir, Options{Clock: e.clk.Now}) // a reader that saw the tail too
			if err != nil {
				t.Fatal(err)
			}

			if len(warned) != 0 {
				t.Fatalf("a reader warned: %q", warned)
			}
			e.b = b
			c := e.create("C")
			if b.TornTail() != nil {
				t.Fatal("TornTail() still set after a write")
			}
			want := fmt.Sprintf("set aside a torn tail of %d bytes at line 4 of %s", len(tail), e.ledgerPath())
			if len(warned) != 1 || !strings.Contains(warned[0], want) || !strings.Contains(warned[0], BrokenFile) {
				t.Fatalf("the writer that set the tail aside said %q, want one warning with %q", warned, want)
			}
			data := e.bytes()
			if !bytes.HasPrefix(data, f.good) || len(splitLines(data[len(f.good):])) != 1 {
				t.Fatalf("ledger after recovery:\n%q", data)
			}
			broken, err := os.ReadFile(filepath.Join(e.dir, BrokenFile))
			if err != nil {
				t.Fatal(err)
			}
			wantBroken := tail
			if !bytes.HasSuffix(tail, []byte{'\n'}) {
				wantBroken = append(append([]byte{}, tail...), '\n')
			}
			if !bytes.Equal(broken, wantBroken) {
				t.Fatalf(".broken = %q, want %q", broken, wantBroken)
			}

			fresh, err := Open(e.dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if fresh.TornTail() != nil {
				t.Fatalf("ledger still has a torn tail: %+v", fresh.TornTail())
			}
			if got, err := fresh.Get("C"); err != nil || mustJSON(t, got) != mustJSON(t, c) {
				t.Fatalf("fresh C = %+v, %v", got, err)
			}
			if got, err := other.Get("C"); err != nil || got.ID != "C" || other.TornTail() != nil {
				t.Fatalf("reader opened before recovery: C = %+v, %v, torn %+v", got, err, other.TornTail())
			}
		})
	}
}

// TestDamagedLastLine: a complete line that is not an event is damage even
// as the last line of the ledger: Open and every write refuse it with the
// line and offset, nothing is set aside, nothing is written.
func TestDamagedLastLine(t *testing.T) {
	f := newRecoveryFixture(t)
	for name, tail := range f.damagedTails() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			data := append(append([]byte{}, f.good...), tail...)
			e.writeLedger(data)
			_, err := Open(e.dir, Options{})
			wantCorrupt(t, err, e.ledgerPath(), 4, int64(len(f.good)))
			e.writeLedger(f.good)
			e.b = e.open()
			e.appendRaw(tail)
			_, _, err = e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "C", Title: "c"})
			wantCorrupt(t, err, e.ledgerPath(), 4, int64(len(f.good)))
			if !bytes.Equal(e.bytes(), data) {
				t.Fatal("a write into a ledger with a damaged last line changed it")
			}
			if _, err := os.Stat(filepath.Join(e.dir, BrokenFile)); !os.IsNotExist(err) {
				t.Fatal("a damaged last line was set aside as a torn tail")
			}
			rep, err := Diagnose(e.dir, e.clk.Now())
			if err != nil || !rep.Corrupt || rep.TornTail != nil || len(rep.Damage) == 0 || rep.Damage[0].Line != 4 || rep.Damage[0].File != LedgerFile {
				t.Fatalf("doctor: %+v, %v", rep, err)
			}
		})
	}
}

// TestBrokenFileAccumulates: each recovery appends to .broken.
func TestBrokenFileAccumulates(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	for i, tail := range []string{"first torn", "second\x00torn\n"} {
		e.appendRaw([]byte(tail))
		e.create(fmt.Sprintf("B%d", i))
	}
	broken, _ := os.ReadFile(filepath.Join(e.dir, BrokenFile))
	if string(broken) != "first torn\nsecond\x00torn\n" {
		t.Fatalf(".broken = %q", broken)
	}
	if n := len(e.events()); n != 3 {
		t.Fatalf("%d events, want 3", n)
	}
}

// TestAppendInProgress: a reader stops before an unterminated line and
// picks the event up once the line is complete.
func TestAppendInProgress(t *testing.T) {
	f := newRecoveryFixture(t)
	e := newEnv(t)
	half := len(f.next) / 2
	e.writeLedger(append(append([]byte{}, f.good...), f.next[:half]...))
	b := e.open()
	if b.TornTail() == nil {
		t.Fatal("unterminated line not reported")
	}
	e.appendRaw(f.next[half:])
	c, err := b.Get("A")
	if err != nil || c.LastHeartbeatAt == nil || b.TornTail() != nil {
		t.Fatalf("after the append completed: %+v, %v, torn %+v", c, err, b.TornTail())
	}
}

func lineOffsets(lines [][]byte) []int64 {
	offs := make([]int64, len(lines))
	var off int64
	for i, l := range lines {
		offs[i] = off
		off += int64(len(l))
	}
	return offs
}

func wantCorrupt(t *testing.T, err error, path string, line int, offset int64) *wire.CorruptError {
	t.Helper()
	var ce *wire.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *CorruptError", err)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("errors.Is(%v, ErrCorrupt) = false", err)
	}
	if ce.Path != path || ce.Line != line || ce.Offset != offset {
		t.Fatalf("CorruptError at %s line %d offset %d, want %s line %d offset %d", ce.Path, ce.Line, ce.Offset, path, line, offset)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("line %d", line)) || !strings.Contains(msg, fmt.Sprintf("offset %d", offset)) {
		t.Fatalf("message does not locate the damage: %s", msg)
	}
	return ce
}

func fiveLineEnv(t *testing.T) (*env, [][]byte) {
	t.Helper()
	e := newEnv(t)
	e.create("A")
	e.create("B")
	e.claim("A", "w1", time.Minute)
	e.appendsOne(OpHeartbeat, doHeartbeat(HeartbeatRequest{ID: "A", Owner: "w1", Epoch: 1}))
	e.appendsOne(OpLink, doLink("B", "A"))
	return e, e.lines()
}

// TestDamagedMiddleLine flips one byte of a line that has good lines after
// it: Open refuses with the damage located, and writers refuse too.
func TestDamagedMiddleLine(t *testing.T) {
	_, lines := fiveLineEnv(t)
	offs := lineOffsets(lines)
	for _, target := range []int{0, 2, 3} {
		l := lines[target]
		for _, pos := range []int{0, 1, len(l) / 2, len(l) - 5, len(l) - 2} {
			t.Run(fmt.Sprintf("line%d-byte%d", target+1, pos), func(t *testing.T) {
				e, _ := fiveLineEnv(t)
				damaged := append([]byte{}, l...)
				damaged[pos] ^= 0x01
				var data []byte
				for i, x := range lines {
					if i == target {
						x = damaged
					}
					data = append(data, x...)
				}
				e.writeLedger(data)
				_, err := Open(e.dir, Options{})
				wantCorrupt(t, err, e.ledgerPath(), target+1, offs[target])
			})
		}
	}
}

// TestDamageAppendedBehindAHandle: damage followed by a good line appears
// after a handle last read; the next write refuses and appends nothing.
func TestDamageAppendedBehindAHandle(t *testing.T) {
	f := newRecoveryFixture(t)
	e := newEnv(t)
	e.writeLedger(f.good)
	e.b = e.open()
	e.appendRaw([]byte("garbage\n"))
	e.appendRaw(f.next)
	before := e.bytes()
	_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "C", Title: "c"})
	wantCorrupt(t, err, e.ledgerPath(), 4, int64(len(f.good)))
	if !bytes.Equal(before, e.bytes()) {
		t.Fatal("a write into a corrupt ledger changed it")
	}
	if _, err := e.b.Get("A"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a corrupt ledger: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, BrokenFile)); !os.IsNotExist(err) {
		t.Fatal("mid-file damage was set aside as a torn tail")
	}
}

// TestDuplicatedAndMisorderedLines: what a git union merge leaves — lines
// out of order, lines twice — reads exactly as the sorted, deduplicated
// file, for readers (state and history) and writers alike, and a writer
// appends after the newest event without rewriting anything.
func TestDuplicatedAndMisorderedLines(t *testing.T) {
	e0, lines := fiveLineEnv(t)
	want, wantLog := e0.foldedJSON(), historyIDs(t, e0.open())
	cases := []struct {
		name  string
		order []int
	}{
		{"duplicated middle", []int{0, 1, 1, 2, 3, 4}},
		{"duplicated last", []int{0, 1, 2, 3, 4, 4}},
		{"duplicated first at the end", []int{0, 1, 2, 3, 4, 0}},
		{"swapped", []int{0, 2, 1, 3, 4}},
		{"reversed and repeated", []int{4, 3, 2, 1, 0, 4, 3, 2, 1, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var data []byte
			for _, i := range tc.order {
				data = append(data, lines[i]...)
			}
			e.writeLedger(data)
			if got := e.foldedJSON(); got != want {
				t.Fatalf("fold differs from the sorted file's:\n%s\nwant\n%s", got, want)
			}
			e.b = e.open()
			if got := historyIDs(t, e.b); !slices.Equal(got, wantLog) {
				t.Fatalf("history %v, want %v", got, wantLog)
			}
			rep, err := Diagnose(e.dir, e.clk.Now())
			if err != nil || rep.Corrupt || len(rep.Damage) != 0 {
				t.Fatalf("diagnose = %+v, %v", rep, err)
			}
			// A writer appends after the newest event; nothing is rewritten.
			e.create("C")
			after := e.bytes()
			if !bytes.HasPrefix(after, data) {
				t.Fatal("the writer rewrote the merged lines")
			}
			last := e.lastEvent()
			for _, l := range lines {
				ev, err := DecodeLine(bytes.TrimSuffix(l, []byte("\n")))
				if err != nil || !ev.Before(last) {
					t.Fatalf("appended %s at %s, not after %v", last.ID, last.At, ev)
				}
			}
			if got := e.foldedJSON(); !strings.Contains(got, `"C"`) {
				t.Fatal("the appended card is missing")
			}
			// Compaction moves the events, sorted and once, into a segment.
			if _, err := e.b.Compact(e.ctx); err != nil {
				t.Fatal(err)
			}
			segs, _ := Segments(e.dir)
			seg, _ := os.ReadFile(segs[0])
			if got, want := seg, append(bytes.Join(lines, nil), after[len(data):]...); !bytes.Equal(got, want) {
				t.Fatalf("segment:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestOneIDTwoLines: two different lines carrying one event id cannot be
// settled by id; that stays damage.
func TestOneIDTwoLines(t *testing.T) {
	_, lines := fiveLineEnv(t)
	ev, err := DecodeLine(bytes.TrimSuffix(lines[3], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	ev.Actor = "someone else"
	other, err := EncodeLine(ev)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.writeLedger(bytes.Join([][]byte{lines[0], lines[1], lines[3], lines[2], other, lines[4]}, nil))
	_, err = Open(e.dir, Options{})
	ce := wantCorrupt(t, err, e.ledgerPath(), 5, int64(len(lines[0])+len(lines[1])+len(lines[3])+len(lines[2])))
	if !strings.Contains(ce.Err.Error(), "also used by a different event") {
		t.Fatalf("cause = %v", ce.Err)
	}
	rep, _ := Diagnose(e.dir, e.clk.Now())
	if !rep.Corrupt || len(rep.Damage) != 1 || rep.Damage[0].Kind != "duplicate" || rep.Damage[0].Repairable {
		t.Fatalf("damage = %+v", rep.Damage)
	}
}

// historyIDs lists the event ids History delivers, in order.
func historyIDs(t testing.TB, b *Backlog) []string {
	t.Helper()
	var ids []string
	if _, err := b.History(HistoryFilter{}, func(e *Event, _ *Conflict) error {
		ids = append(ids, e.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestNewerFormatVersion: a checksummed line from a newer bl is refused,
// at the end of the file as well as in the middle, never set aside.
func TestNewerFormatVersion(t *testing.T) {
	f := newRecoveryFixture(t)
	v2, err := EncodeLine(&Event{V: FormatVersion + 1, ID: "ffffffffffffffff", At: t0.Add(time.Hour), Actor: "future", Op: OpBlock, Card: "A"})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"last":   append(append([]byte{}, f.good...), v2...),
		"middle": append(append(append([]byte{}, f.good...), v2...), f.next...),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.writeLedger(data)
			_, err := Open(e.dir, Options{})
			if !errors.Is(err, ErrVersion) {
				t.Fatalf("Open: %v, want ErrVersion", err)
			}
			wantCorrupt(t, err, e.ledgerPath(), 4, int64(len(f.good)))
		})
	}
}

// TestOverlongLine: a line longer than a reader accepts is never written;
// one found in a file is damage.
func TestOverlongLine(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	labels := make([]string, wire.MaxListEntries)
	for i := range labels {
		labels[i] = fmt.Sprintf("%04d-%s", i, strings.Repeat("l", wire.MaxLine/wire.MaxListEntries))
	}
	err := e.unchanged(ErrInvalid, func(e *env) error {
		_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Labels: &labels}})
		return err
	})
	if !strings.Contains(err.Error(), "limit") {
		t.Fatalf("error = %v", err)
	}

	good := e.bytes()
	huge := bytes.Repeat([]byte("x"), wire.MaxLine+(512<<10))
	f := newRecoveryFixture(t)
	for name, tc := range map[string]struct {
		data    []byte
		corrupt bool
	}{
		"unterminated at the end": {append(append([]byte{}, good...), huge...), false},
		"at the end":              {append(append(append([]byte{}, f.good...), huge...), '\n'), true},
		"before good line":        {append(append(append(append([]byte{}, f.good...), huge...), '\n'), f.next...), true},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.writeLedger(tc.data)
			b, err := Open(e.dir, Options{})
			if tc.corrupt {
				wantCorrupt(t, err, e.ledgerPath(), 4, int64(len(f.good)))
				return
			}
			if err != nil || b.TornTail() == nil || b.TornTail().Offset != int64(len(good)) {
				t.Fatalf("Open = %v, torn %+v", err, b.TornTail())
			}
		})
	}
}

func TestOpenNotInitialized(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("Open of an empty dir: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, LedgerFile), 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory for a ledger (git's checkout of a submodule there) is
	// damage, named: "not initialized" would send one to bl init, which
	// finds the backlog there.
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Open with a directory for a ledger: %v", err)
	}
}

func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", ".backlog")
	created, err := Init(dir)
	if err != nil || !created {
		t.Fatalf("Init = %v, %v", created, err)
	}
	for _, name := range []string{LedgerFile, ConfigFile, LockFile, IgnoreFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	ignore, _ := os.ReadFile(filepath.Join(dir, IgnoreFile))
	for _, want := range []string{"lock", "*.broken"} {
		if !strings.Contains(string(ignore), want+"\n") {
			t.Fatalf(".gitignore lacks %q:\n%s", want, ignore)
		}
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Create(t.Context(), CreateRequest{Mutation: m, ID: "A", Title: "a"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, LedgerFile))
	created, err = Init(dir)
	if err != nil || created {
		t.Fatalf("second Init = %v, %v", created, err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, LedgerFile))
	if !bytes.Equal(before, after) {
		t.Fatal("Init on an existing backlog changed the ledger")
	}
}
