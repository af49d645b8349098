package ledger

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitIn runs the real git in dir with the user's configuration out of
// the way.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// hostileLines are single lines a teammate can push: every way a line
// can fail to read, each but the newer-format one set aside when git
// wrote it.
func hostileLines(t *testing.T) map[string]string {
	good, err := EncodeLine(&Event{V: 1, ID: "00000000000000a1", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Actor: "m", Op: OpCreate, Card: "Z1", Fields: &Fields{Title: ptr("z")}})
	if err != nil {
		t.Fatal(err)
	}
	g := strings.TrimSuffix(string(good), "\n")
	future, _ := EncodeLine(&Event{V: 1, ID: "00000000000000a2", At: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), Actor: "m", Op: OpCreate, Card: "Z2", Fields: &Fields{Title: ptr("z")}})
	past, _ := EncodeLine(&Event{V: 1, ID: "00000000000000a3", At: time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), Actor: "m", Op: OpCreate, Card: "Z3", Fields: &Fields{Title: ptr("z")}})
	return map[string]string{
		"checksum":     strings.Replace(g, `"title":"z"`, `"title":"y"`, 1),
		"no checksum":  g[:strings.LastIndex(g, `,"crc"`)] + "}",
		"future stamp": strings.TrimSuffix(string(future), "\n"),
		"past stamp":   strings.TrimSuffix(string(past), "\n"),
		"not json":     "hello, world",
		"json array":   `[1,2,3]`,
		"empty object": `{}`,
		"torn json":    g[:40],
		"nul":          g[:30] + "\x00" + g[31:],
		"long":         `{"v":1,"x":"` + strings.Repeat("a", 2<<20) + `"}`,
		"blank":        "",
		"spaces":       "   \t",
		"marker":       "<<<<<<< HEAD",
		"ctrl chars":   "\x1b[2J\x1b[31mred",
		"invalid utf8": "\xff\xfe\xfd",
		"unknown op":   strings.Replace(g, `"op":"create"`, `"op":"explode"`, 1),
	}
}

// TestLinesGitWroteAreQuarantined: a teammate's hostile line, taken with
// git (the ledger is the bytes git's index holds), is set aside and the
// backlog opens; the same line appended locally is damage (ErrCorrupt).
func TestLinesGitWroteAreQuarantined(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	for name, bad := range hostileLines(t) {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			gitIn(t, root, "init", "-q")
			dir := filepath.Join(root, ".backlog")
			if _, err := Init(dir); err != nil {
				t.Fatal(err)
			}
			b, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.Create(t.Context(), CreateRequest{Mutation: m, ID: "A", Title: "a"}); err != nil {
				t.Fatal(err)
			}
			good, _ := os.ReadFile(filepath.Join(dir, LedgerFile))
			// A good line after it: damage mid-file, not a torn tail.
			after, err := EncodeLine(&Event{V: 1, ID: "00000000000000b1", At: time.Now().UTC(), Actor: "m", Op: OpCreate, Card: "Z9", Fields: &Fields{Title: ptr("after")}})
			if err != nil {
				t.Fatal(err)
			}
			appendTo(t, filepath.Join(dir, LedgerFile), bad+"\n"+string(after))
			if _, _, err := b.Create(t.Context(), CreateRequest{Mutation: m, ID: "B", Title: "b"}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("local damage: %v, want ErrCorrupt", err)
			}

			// The same bytes committed (what a pull leaves): set aside.
			gitIn(t, root, "add", "-A")
			gitIn(t, root, "commit", "-qm", "teammate")
			var warned []string
			b2, err := Open(dir, Options{Warn: func(s string) { warned = append(warned, s) }})
			if err != nil {
				t.Fatalf("Open after git wrote the line: %v", err)
			}
			if _, _, err := b2.Create(t.Context(), CreateRequest{Mutation: m, ID: "B", Title: "b"}); err != nil {
				t.Fatal(err)
			}
			if len(warned) != 1 || !strings.Contains(warned[0], "quarantined line 2 of ledger.jsonl from git") {
				t.Fatalf("warnings: %q", warned)
			}
			for _, w := range warned {
				if strings.ContainsAny(w, "\x00\x1b") {
					t.Fatalf("a control character reached the warning: %q", w)
				}
			}
			now, _ := os.ReadFile(filepath.Join(dir, LedgerFile))
			if !bytes.HasPrefix(now, append(good, after...)) || bytes.Contains(now, []byte(bad+"\n")) && strings.TrimSpace(bad) != "" {
				t.Fatalf("ledger after the set-aside:\n%q", now)
			}
			broken, _ := os.ReadFile(filepath.Join(dir, BrokenFile))
			if !bytes.Contains(broken, []byte(bad+"\n")) {
				t.Fatalf("the line is not in %s", BrokenFile)
			}
			if q, _ := ReadQuarantine(dir); len(q) != 1 || q[0].From != "git" || len(q[0].Commit) != 40 {
				t.Fatalf("quarantine list: %+v", q)
			}
		})
	}
}

// TestNewerFormatLineIsNeverSetAside: a line of a newer bl is an event
// this bl cannot read, wherever it came from: dropping it would lose it.
func TestNewerFormatLineIsNeverSetAside(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	gitIn(t, root, "init", "-q")
	dir := filepath.Join(root, ".backlog")
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	line, err := EncodeLine(&Event{V: FormatVersion + 1, ID: "00000000000000f1", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Actor: "future", Op: OpBlock, Card: "A"})
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(dir, LedgerFile), string(line))
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "-qm", "newer")
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrVersion) {
		t.Fatalf("Open: %v, want ErrVersion", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, LedgerFile)); !bytes.Equal(data, line) {
		t.Fatal("the newer line was moved")
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestQuarantineLinesSecondEvent: a line reusing an earlier line's event
// id for another event is set aside; a repeat of the line (a union merge)
// and a restamped copy of the event (bl sync's rebase) are one event.
func TestQuarantineLinesSecondEvent(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	line := func(e Event) string {
		b, err := EncodeLine(&e)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := line(Event{V: 1, ID: "00000000000000c1", At: at, Actor: "a", Op: OpCreate, Card: "A", Fields: &Fields{Title: ptr("a")}})
	other := line(Event{V: 1, ID: "00000000000000c2", At: at, Actor: "a", Op: OpCreate, Card: "B", Fields: &Fields{Title: ptr("b")}})
	restamped := line(Event{V: 1, ID: "00000000000000c1", At: at.Add(time.Hour), Actor: "a", Op: OpCreate, Card: "A", Fields: &Fields{Title: ptr("a")}})
	forged := line(Event{V: 1, ID: "00000000000000c1", At: at, Actor: "m", Op: OpCreate, Card: "Z", Fields: &Fields{Title: ptr("z")}})
	for _, ok := range []string{first + other + first, first + restamped + other} {
		if kept, bad := QuarantineLines([]byte(ok), "git", "c0ffee", LedgerFile); bad != nil || kept != nil {
			t.Fatalf("one event met twice was set aside: %+v", bad)
		}
	}
	kept, bad := QuarantineLines([]byte(first+other+forged+restamped), "git", "c0ffee", LedgerFile)
	if len(bad) != 1 || bad[0].Line != 3 || !strings.Contains(bad[0].Reason, "also used by line 1") {
		t.Fatalf("set aside: %+v", bad)
	}
	if string(kept) != first+other+restamped {
		t.Fatalf("kept:\n%s", kept)
	}
	// The forged copy first: the line every clone held before is the one
	// that stands only by order, so the later one goes.
	if _, bad := QuarantineLines([]byte(forged+first), "git", "c0ffee", LedgerFile); len(bad) != 1 || bad[0].Line != 2 {
		t.Fatalf("set aside: %+v", bad)
	}
}

// TestNotedHeartbeatGitTracksIsNotCarried: a noted heartbeat is what an
// agent of this clone did; one git tracks is a teammate's file (a pushed
// note for this clone's lease, timed as they like), never carried.
func TestNotedHeartbeatGitTracksIsNotCarried(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	gitIn(t, root, "init", "-q")
	dir := filepath.Join(root, ".backlog")
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := NotedHeartbeat{Card: "A", Owner: "w1", Actor: "m", Epoch: 1, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := b.NoteHeartbeat(h); err != nil {
		t.Fatal(err)
	}
	if got := b.NotedHeartbeats(); len(got) != 1 {
		t.Fatalf("this clone's note: %+v", got)
	}
	gitIn(t, root, "add", "-f", ".backlog/cache/heartbeats")
	if got := b.NotedHeartbeats(); len(got) != 0 {
		t.Fatalf("a note git tracks is carried: %+v", got)
	}
}
