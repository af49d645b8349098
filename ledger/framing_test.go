package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// crlf gives every line a "\r\n" line end, as a core.autocrlf=true checkout
// does.
func crlf(data []byte) []byte {
	return bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
}

// loseNewline drops the final line end, as an editor or a copy can.
func loseNewline(data []byte) []byte {
	return bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
}

// backlogView is what a fresh reader sees of a backlog.
type backlogView struct {
	state     string
	events    int64
	conflicts int
	history   []string
}

func viewBacklog(t *testing.T, dir string) backlogView {
	t.Helper()
	b, err := Open(dir, Options{Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer b.Close()
	if tt := b.TornTail(); tt != nil {
		t.Fatalf("torn tail %+v", tt)
	}
	var v backlogView
	if err := b.view(func(s *fold.State, _ time.Time) error {
		v.state, v.events, v.conflicts = stateJSON(t, s), s.Events(), len(s.Conflicts())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.History(HistoryFilter{}, func(e *Event, _ *Conflict) error {
		v.history = append(v.history, e.ID)
		return nil
	}); err != nil {
		t.Fatalf("History: %v", err)
	}
	return v
}

func (v backlogView) equal(w backlogView) bool {
	return v.state == w.state && v.events == w.events && v.conflicts == w.conflicts &&
		strings.Join(v.history, ",") == strings.Join(w.history, ",")
}

// compactedEnv is a backlog with a snapshot, an archive segment and a
// ledger tail.
func compactedEnv(t *testing.T) *env {
	e := newEnv(t)
	e.create("A")
	e.create("B", func(r *CreateRequest) { r.DependsOn = []string{"A"} })
	e.claim("A", "w1", time.Minute)
	if _, err := e.b.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.create("C")
	e.claim("C", "w2", time.Minute)
	return e
}

// TestFramedFilesReadTheSame: a backlog whose ledger, snapshot and archive
// have "\r\n" line ends (a CRLF checkout), or lost their final newline, or
// both, reads as the same cards, events and history, through the snapshot
// index too; doctor calls it sound; git's view (Tree) folds the same; and the
// next write keeps every event and appends after them.
func TestFramedFilesReadTheSame(t *testing.T) {
	for name, change := range map[string]func([]byte) []byte{
		"crlf":                   crlf,
		"lost newline":           loseNewline,
		"crlf, lost newline":     func(b []byte) []byte { return loseNewline(crlf(b)) },
		"crlf, only the cr left": func(b []byte) []byte { return bytes.TrimSuffix(crlf(b), []byte("\n")) },
	} {
		t.Run(name, func(t *testing.T) {
			e := compactedEnv(t)
			want := viewBacklog(t, e.dir)
			wantTree, err := ReadTree(e.dir)
			if err != nil {
				t.Fatal(err)
			}
			wantFold, err := wantTree.fold(true)
			if err != nil {
				t.Fatal(err)
			}
			names, _ := store.ArchiveNames(e.dir)
			if len(names) != 1 {
				t.Fatalf("archives %v", names)
			}
			for _, n := range append(names, SnapshotFile, LedgerFile) {
				p := filepath.Join(e.dir, n)
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, change(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			removeIndex(e.dir)
			// Once with the index rebuilt from the changed snapshot, once
			// through it.
			for i := range 2 {
				if got := viewBacklog(t, e.dir); !got.equal(want) {
					t.Fatalf("read %d:\n%+v\nwant\n%+v", i, got, want)
				}
			}
			if _, err := os.Stat(filepath.Join(e.dir, CacheDir, IndexFile)); err != nil {
				t.Fatalf("no index built from the changed snapshot: %v", err)
			}
			tree, err := ReadTree(e.dir)
			if err != nil {
				t.Fatal(err)
			}
			fold, err := tree.fold(true)
			if err != nil {
				t.Fatalf("Tree.Fold: %v", err)
			}
			if stateJSON(t, fold) != stateJSON(t, wantFold) {
				t.Fatal("git's view of the changed files folds differently")
			}
			rep, err := Diagnose(e.dir, e.clk.Now())
			if err != nil || rep.Corrupt || rep.TornTail != nil || len(rep.Damage) != 0 || rep.Cards != 3 {
				t.Fatalf("doctor: %+v, %v", rep, err)
			}

			before := e.bytes()
			e.b = e.open()
			e.create("D")
			after := e.bytes()
			if !bytes.HasPrefix(after, before) {
				t.Fatalf("the write changed what was there:\n%q\n%q", before, after)
			}
			added := after[len(before):]
			if !bytes.HasSuffix(before, []byte("\n")) {
				if added[0] != '\n' {
					t.Fatalf("the newline the last event lost was not restored: %q", added)
				}
				added = added[1:]
			}
			if ev, err := DecodeLine(added); err != nil || ev.Card != "D" || bytes.Count(added, []byte("\n")) != 1 {
				t.Fatalf("appended %q (%v)", added, err)
			}
			if _, err := os.Stat(filepath.Join(e.dir, BrokenFile)); !os.IsNotExist(err) {
				t.Fatal("something was set aside")
			}
			got := viewBacklog(t, e.dir)
			if got.events != want.events+1 || !strings.HasPrefix(strings.Join(got.history, ","), strings.Join(want.history, ",")) {
				t.Fatalf("after the write: %d events, history %v; before %d, %v", got.events, got.history, want.events, want.history)
			}
			// Compaction of such a ledger archives its lines as they are.
			if _, err := e.b.Compact(e.ctx); err != nil {
				t.Fatal(err)
			}
			if again := viewBacklog(t, e.dir); again.state != got.state || again.events != got.events {
				t.Fatal("compaction changed the state")
			}
		})
	}
}

// TestLostFinalNewline: a final event that lost its newline is an event for
// every reader; the next writer restores the newline before appending (and
// sets nothing aside), and a reader that saw the line without its newline
// goes on reading past it.
func TestLostFinalNewline(t *testing.T) {
	f := newRecoveryFixture(t)
	e := newEnv(t)
	bare := f.next[:len(f.next)-1]
	e.writeLedger(append(append([]byte{}, f.good...), bare...))
	var warned []string
	b, err := Open(e.dir, Options{Clock: e.clk.Now, Warn: func(msg string) { warned = append(warned, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	if b.TornTail() != nil {
		t.Fatalf("a complete event taken for a torn tail: %+v", b.TornTail())
	}
	if c, err := b.Get("A"); err != nil || c.LastHeartbeatAt == nil {
		t.Fatalf("the last event was not folded: %+v, %v", c, err)
	}
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || rep.Corrupt || rep.TornTail != nil || rep.LostNewline != 4 || rep.Lines != 4 {
		t.Fatalf("doctor: %+v, %v", rep, err)
	}
	reader := e.open()
	cur, off, err := ReadEvents(e.ledgerPath(), 0, Cursor{}, func(*Event) error { return nil })
	if err != nil || off != int64(len(f.good)+len(bare)) || cur.ID == "" {
		t.Fatalf("ReadEvents = %v, %d, %v", cur, off, err)
	}

	e.b = b
	e.create("C")
	data := e.bytes()
	want := append(append([]byte{}, f.good...), f.next...)
	if !bytes.HasPrefix(data, want) || len(splitLines(data[len(want):])) != 1 {
		t.Fatalf("ledger after the write:\n%q", data)
	}
	if _, err := os.Stat(filepath.Join(e.dir, BrokenFile)); !os.IsNotExist(err) {
		t.Fatal("a complete event was set aside")
	}
	if len(warned) != 0 {
		t.Fatalf("warned %q", warned)
	}
	if c, err := reader.Get("C"); err != nil || c.ID != "C" {
		t.Fatalf("a reader that saw the line without its newline: %+v, %v", c, err)
	}
	var next []string
	if _, _, err := ReadEvents(e.ledgerPath(), off, cur, func(e *Event) error { next = append(next, e.Card); return nil }); err != nil || len(next) != 1 || next[0] != "C" {
		t.Fatalf("a follower resuming after the line without its newline: %v, %v", next, err)
	}
	if v := viewBacklog(t, e.dir); v.events != 5 {
		t.Fatalf("%d events", v.events)
	}

	// Repair restores the newline too.
	e.writeLedger(append(append([]byte{}, f.good...), bare...))
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.LostNewline != 0 || len(after.Repaired) != 1 || !strings.Contains(after.Repaired[0], "newline") {
		t.Fatalf("repair: %+v, %v", after, err)
	}
	if !bytes.Equal(e.bytes(), want) {
		t.Fatalf("after repair: %q", e.bytes())
	}
}

// TestJudge is the framing rule, line by line: what is an event, what a
// torn tail, what damage.
func TestJudge(t *testing.T) {
	f := newRecoveryFixture(t)
	lines := splitLines(f.good)
	l1, l2 := lines[0], lines[1]
	cut := func(l []byte) []byte { return l[:len(l)-1] }
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	bad := append([]byte{}, l2...)
	bad[len(bad)/2] ^= 1
	v2, err := EncodeLine(&Event{V: FormatVersion + 1, ID: "ffffffffffffffff", At: t0.Add(time.Hour), Actor: "future", Op: OpBlock, Card: "A"})
	if err != nil {
		t.Fatal(err)
	}
	nul := make([]byte, 16)
	type want struct {
		events  int
		torn    int // line of the torn tail, 0 for none
		corrupt int // line of the damage, 0 for none
		cause   error
	}
	for _, tc := range []struct {
		name string
		data []byte
		want want
	}{
		{"empty", nil, want{}},
		{"lf", join(l1, l2), want{events: 2}},
		{"crlf", crlf(join(l1, l2)), want{events: 2}},
		{"mixed", join(crlf(l1), l2), want{events: 2}},
		{"lost newline", join(l1, cut(l2)), want{events: 2}},
		{"lost crlf", join(l1, cut(crlf(l2))[:len(l2)-1]), want{events: 2}},
		{"prefix", join(l1, l2[:40]), want{events: 1, torn: 2}},
		{"nul run", join(l1, nul), want{events: 1, torn: 2}},
		{"nul line", join(l1, nul, []byte("\n")), want{events: 1, torn: 2}},
		{"nul lines", join(l1, nul, []byte("\n"), nul), want{events: 1, torn: 2}},
		{"nul then a line end", join(l1, nul, l2[20:]), want{events: 1, torn: 2}},
		{"bad checksum, unterminated", join(l1, cut(bad)), want{events: 1, torn: 2}},
		{"bad checksum, last line", join(l1, bad), want{events: 1, corrupt: 2, cause: wire.ErrChecksum}},
		{"bad checksum, crlf", join(l1, crlf(bad)), want{events: 1, corrupt: 2, cause: wire.ErrChecksum}},
		{"bad checksum mid-file", join(l1, bad, l2), want{events: 1, corrupt: 2, cause: wire.ErrChecksum}},
		{"blank last line", join(l1, []byte("\n")), want{events: 1, corrupt: 2, cause: wire.ErrBlank}},
		{"blank crlf line mid-file", join(l1, []byte("\r\n"), l2), want{events: 1, corrupt: 2, cause: wire.ErrBlank}},
		{"nul line then a line", join(l1, nul, []byte("\n"), l2), want{events: 1, corrupt: 2, cause: wire.ErrFraming}},
		{"prefix then garbage line", join(l1, nul, []byte("\n"), []byte("garbage\n")), want{events: 1, corrupt: 2, cause: wire.ErrFraming}},
		{"newer version, last", join(l1, v2), want{events: 1, corrupt: 2, cause: ErrVersion}},
		{"newer version, lost newline", join(l1, cut(v2)), want{events: 1, corrupt: 2, cause: ErrVersion}},
		{"overlong, terminated", join(l1, bytes.Repeat([]byte("x"), wire.MaxLine+10), []byte("\n")), want{events: 1, corrupt: 2, cause: wire.ErrFraming}},
		{"overlong, unterminated", join(l1, bytes.Repeat([]byte("x"), wire.MaxLine+10)), want{events: 1, torn: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, end, torn, err := wire.ReadEventsData("L", tc.data)
			var got want
			got.events = len(evs)
			if torn != nil {
				got.torn = torn.Line
				if end != torn.Offset || torn.Offset+torn.Bytes != int64(len(tc.data)) || torn.Reason == "" {
					t.Fatalf("torn tail %+v, end %d, file %d bytes", torn, end, len(tc.data))
				}
			}
			var ce *wire.CorruptError
			if errors.As(err, &ce) {
				got.corrupt, got.events = ce.Line, tc.want.events
				if tc.want.cause != nil && !errors.Is(err, tc.want.cause) {
					t.Fatalf("cause %v, want %v", err, tc.want.cause)
				}
				if ce.Path != "L" || ce.Offset != int64(len(l1)) {
					t.Fatalf("corrupt at %s offset %d", ce.Path, ce.Offset)
				}
				got.cause = tc.want.cause
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v (%v)", got, tc.want, err)
			}
			// Doctor and the archive reader judge it the same way.
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, LedgerFile), tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := Diagnose(dir, t0)
			if err != nil {
				t.Fatal(err)
			}
			if (rep.TornTail != nil) != (tc.want.torn != 0) || (rep.Corrupt != (tc.want.corrupt != 0)) {
				t.Fatalf("doctor: torn %+v, damage %+v", rep.TornTail, rep.Damage)
			}
			if tc.want.corrupt != 0 && (rep.Damage[0].Line != tc.want.corrupt || rep.Damage[0].File != LedgerFile) {
				t.Fatalf("doctor: damage %+v", rep.Damage)
			}
			if _, err := store.DecodeAll("L", tc.data); (err != nil) != (tc.want.torn != 0 || tc.want.corrupt != 0) {
				t.Fatalf("store.DecodeAll: %v", err)
			}
		})
	}
}

// TestDoctorBlankLine: a blank line is damage (a reader refuses it), and
// repair drops it without losing an event.
func TestDoctorBlankLine(t *testing.T) {
	e := seeded(t)
	lines := e.lines()
	data := bytes.Join([][]byte{lines[0], lines[1], []byte("\n"), lines[2], lines[3], lines[4]}, nil)
	e.write(data)
	_, err := Open(e.dir, Options{})
	wantCorrupt(t, err, e.ledgerPath(), 3, int64(len(lines[0])+len(lines[1])))
	rep, _ := Diagnose(e.dir, e.clk.Now())
	if !rep.Corrupt || len(rep.Damage) != 1 || rep.Damage[0].Kind != "blank" || !rep.Damage[0].Repairable {
		t.Fatalf("damage = %+v", rep.Damage)
	}
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.Corrupt || len(after.Repaired) != 1 || !strings.Contains(after.Repaired[0], "dropped 1 blank line") {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	if strings.Contains(after.Repaired[0], BrokenFile) {
		t.Fatalf("repair claims a copy it did not write: %q", after.Repaired[0])
	}
	if !bytes.Equal(e.bytes(), bytes.Join(lines, nil)) {
		t.Fatalf("repaired ledger:\n%s", e.bytes())
	}
}

// TestDoctorNamesFiles: snapshot damage is reported as snapshot damage,
// and the way back names the file as git knows it.
func TestDoctorNamesFiles(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, ".backlog")
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if got := GitPath(dir, LedgerFile); got != ".backlog/ledger.jsonl" {
		t.Fatalf("gitPath = %q", got)
	}
	if got := GitPath(t.TempDir(), SnapshotFile); !filepath.IsAbs(got) || filepath.Base(got) != SnapshotFile {
		t.Fatalf("gitPath outside a repository = %q", got)
	}
	e := compactedEnv(t)
	snap := filepath.Join(e.dir, SnapshotFile)
	data, _ := os.ReadFile(snap)
	i := bytes.Index(data, []byte(`"card":{"id":"B"`))
	data[i+14] = 'X'
	if err := os.WriteFile(snap, data, 0o644); err != nil {
		t.Fatal(err)
	}
	removeIndex(e.dir)
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || !rep.Corrupt || len(rep.Damage) != 1 {
		t.Fatalf("doctor: %+v, %v", rep, err)
	}
	if d := rep.Damage[0]; d.File != SnapshotFile || d.Kind != "snapshot" || d.Line != 3 || d.Repairable {
		t.Fatalf("damage %+v", d)
	}
	_, err = Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), snap+" line 3") || !strings.Contains(err.Error(), "git log -p -- "+snap) {
		t.Fatalf("repair: %v", err)
	}

	// Damage in an archive segment is reported with the segment's name.
	e = compactedEnv(t)
	names, _ := store.ArchiveNames(e.dir)
	seg := filepath.Join(e.dir, names[0])
	data, _ = os.ReadFile(seg)
	lines := splitLines(data)
	data[len(lines[0])+10] ^= 1
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Diagnose(e.dir, e.clk.Now())
	if err != nil || !rep.Corrupt || len(rep.Damage) != 1 {
		t.Fatalf("doctor: %+v, %v", rep, err)
	}
	if d := rep.Damage[0]; d.File != names[0] || d.Kind != "archive" || d.Line != 2 || d.Offset != int64(len(lines[0])) || d.Repairable {
		t.Fatalf("damage %+v", d)
	}
}

// TestSetAsideListed: doctor lists what writers set aside, and counts the
// valid events in it the backlog lacks.
func TestSetAsideListed(t *testing.T) {
	e := seeded(t)
	lost, err := EncodeLine(&Event{V: 1, ID: "00000000000000ff", At: t0.Add(time.Hour), Actor: "old", Op: OpBlock, Card: "A"})
	if err != nil {
		t.Fatal(err)
	}
	kept := e.lines()[0]
	if err := os.WriteFile(filepath.Join(e.dir, BrokenFile), bytes.Join([][]byte{[]byte("torn\n"), lost, kept}, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || rep.SetAside == nil || rep.SetAside.Events != 1 || rep.SetAside.Bytes == 0 {
		t.Fatalf("doctor: %+v, %v", rep.SetAside, err)
	}
	os.Remove(filepath.Join(e.dir, BrokenFile))
	if rep, _ := Diagnose(e.dir, e.clk.Now()); rep.SetAside != nil {
		t.Fatalf("set aside %+v without a .broken file", rep.SetAside)
	}
}

// TestRebaseOntoLostNewline: events rebased onto an upstream ledger whose
// last event lost its newline (or that has "\r\n" line ends) go after it,
// each on a line of its own.
func TestRebaseOntoLostNewline(t *testing.T) {
	for name, change := range map[string]func([]byte) []byte{
		"lost newline":       loseNewline,
		"crlf, lost newline": func(b []byte) []byte { return loseNewline(crlf(b)) },
	} {
		t.Run(name, func(t *testing.T) {
			base := seeded(t)
			local := cloneOf(t, base)
			up := cloneOf(t, base)
			local.create("L1")
			up.create("U1")
			upstream := up.tree()
			upstream[LedgerFile] = change(upstream[LedgerFile])
			out, res, err := rebase(upstream, local.tree())
			if err != nil || res.Local != 1 {
				t.Fatalf("Rebase: %+v, %v", res, err)
			}
			evs, err := store.DecodeAll(LedgerFile, out[LedgerFile])
			if err != nil || len(evs) != 7 {
				t.Fatalf("rebased ledger: %d events, %v\n%s", len(evs), err, out[LedgerFile])
			}
			s, err := out.fold(true)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"A", "B", "C", "U1", "L1"} {
				if _, ok := s.Card(id); !ok {
					t.Fatalf("card %s lost", id)
				}
			}
		})
	}
}
