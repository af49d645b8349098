// End-to-end tests of the bl command line: the scripts in
// testdata/script/*.txtar at the repository root, run with testscript.
//
// Each script runs in a fresh $WORK directory with BL_ACTOR=tester, HOME set
// to $WORK/.home and git configured hermetically (GIT_CONFIG_NOSYSTEM,
// author and committer names). `exec bl ...` runs a real bl process, the
// lean bl (cmd/bl); `exec bl-git ...` runs bl with git built in
// (cmd/bl-git). Both are built once per go test run (internal/testbin),
// with the race detector when the test binary has it, and sit in one
// directory on PATH, so bl hands its git work to that bl-git as an
// installed bl would. Bare `bl ...` is refused, so every process start is
// visible in the script.
//
// Commands added to the standard testscript set:
//
//	exitcode N prog [args...]
//	    Run prog like exec (stdin included) and require exit status N
//	    exactly. stdout and stderr stay available to the next
//	    stdout/stderr/cmp lines. `! exitcode` is not allowed.
//
//	lines FILE N
//	    FILE (or stdout/stderr) holds exactly N newline characters.
//	    Used to prove that a command appended nothing to ledger.jsonl.
//
//	ids [ID...]
//	    The last stdout is JSON: an array of cards, one card, or null.
//	    Its "id" fields, in order, are exactly the given ids (none for
//	    [] or null).
//
//	errjson CODE EXIT
//	    The last stderr is exactly one JSON object on one line, with a
//	    non-empty "error", "code" equal to CODE and "exit_code" equal to
//	    EXIT, and nothing else.
//
//	capture VAR REGEXP
//	    Set $VAR to the first parenthesised group of REGEXP in the last
//	    stdout (for generated ids and timestamps).
//
//	sleep DURATION
//	    Pause, for lease-expiry tests (Go duration: 1100ms).
//
//	appendraw FILE TEXT
//	    Append TEXT to FILE with no newline added (torn lines). Go escapes
//	    in TEXT are decoded: \n, \x00, \\.
//
//	setraw VAR TEXT
//	    Set $VAR to TEXT with Go escapes decoded (\x1b, \a, \n, \xff):
//	    arguments holding control characters or invalid UTF-8.
//
//	holdlock FILE
//	    Take an exclusive flock on FILE from the test process and keep it
//	    until `releaselock FILE` or the end of the script.
//
//	releaselock FILE
//	    Drop a lock taken with holdlock.
//
//	waitfile FILE...
//	    Wait until each FILE exists and is not empty: a background
//	    command has started. No time budget of its own (see waitEnd).
//
//	waitgone PIDFILE...
//	    Wait until the process whose pid each PIDFILE holds has exited
//	    (gone or a zombie). Linux only.
//
//	waitqueued FILE
//	    Wait until a process is queued for the flock on FILE (Linux
//	    /proc/locks; a one-second sleep elsewhere).
//
//	waitwatching
//	    Wait until a process working in the script's directory watches
//	    files through inotify (Linux /proc; a one-second sleep elsewhere).
//
//	waitmatch REGEXP FILE
//	    Wait until FILE holds a match for REGEXP.
//
//	waitwchan PIDFILE NAME
//	    Wait until a thread of the process in PIDFILE sleeps in the
//	    kernel function NAME (Linux /proc; a one-second sleep elsewhere).
//
// Run with -update to rewrite the expected files that cmp compares against.
package cli_test

import (
	"bytes"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/gofrs/flock"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bl-backlog/bl/internal/testbin"
)

var update = flag.Bool("update", false, "rewrite cmp golden files in testdata/script")

func TestScripts(t *testing.T) {
	setWaitEnd(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		Setup:               setupScript,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":     cmdExitcode,
			"lines":        cmdLines,
			"ids":          cmdIDs,
			"errjson":      cmdErrJSON,
			"capture":      cmdCapture,
			"sleep":        cmdSleep,
			"appendraw":    cmdAppendRaw,
			"setraw":       cmdSetRaw,
			"recrc":        cmdRecrc,
			"holdlock":     cmdHoldLock,
			"releaselock":  cmdReleaseLock,
			"waitfile":     cmdWaitFile,
			"waitgone":     cmdWaitGone,
			"waitqueued":   cmdWaitQueued,
			"waitwatching": cmdWaitWatching,
			"waitmatch":    cmdWaitMatch,
			"waitwchan":    cmdWaitWchan,
		},
	})
}

func setupScript(env *testscript.Env) error {
	bin, err := testbin.Dir(testbin.Config{Race: testbin.Race}, "bl", "bl-git")
	if err != nil {
		return err
	}
	env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
	home := filepath.Join(env.WorkDir, ".home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	env.Setenv("HOME", home)
	env.Setenv("BL_ACTOR", "tester")
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	env.Setenv("GIT_AUTHOR_NAME", "tester")
	env.Setenv("GIT_AUTHOR_EMAIL", "tester@example.com")
	env.Setenv("GIT_COMMITTER_NAME", "tester")
	env.Setenv("GIT_COMMITTER_EMAIL", "tester@example.com")
	if os.Getenv("GORACE") == "" {
		// A -race build sleeps a second at exit by default; every bl
		// process in a script is one.
		env.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	env.Values[lockKey{}] = map[string]*flock.Flock{}
	return nil
}

func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		ee, ok := err.(interface{ ExitCode() int })
		if !ok {
			ts.Fatalf("exitcode: %s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

func cmdLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	want, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("lines: %q is not a number", args[1])
	}
	got := strings.Count(ts.ReadFile(args[0]), "\n")
	switch {
	case !neg && got != want:
		ts.Fatalf("%s has %d lines, want %d", args[0], got, want)
	case neg && got == want:
		ts.Fatalf("%s has %d lines, want any other number", args[0], got)
	}
}

func cmdIDs(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! ids")
	}
	out := ts.ReadFile("stdout")
	var raw json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		ts.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	type card struct {
		ID *string `json:"id"`
	}
	var cards []card
	switch t := bytes.TrimSpace(raw); {
	case string(t) == "null":
	case len(t) > 0 && t[0] == '[':
		ts.Check(json.Unmarshal(t, &cards))
	case len(t) > 0 && t[0] == '{':
		var c card
		ts.Check(json.Unmarshal(t, &c))
		cards = []card{c}
	default:
		ts.Fatalf("stdout is JSON but not an array, object or null: %s", t)
	}
	got := []string{}
	for i, c := range cards {
		if c.ID == nil {
			ts.Fatalf("element %d of stdout has no \"id\"", i)
		}
		got = append(got, *c.ID)
	}
	if !slices.Equal(got, args) && !(len(got) == 0 && len(args) == 0) {
		ts.Fatalf("ids %v, want %v", got, args)
	}
}

func cmdErrJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! errjson")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: errjson CODE EXIT")
	}
	exit, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("errjson: %q is not a number", args[1])
	}
	se := ts.ReadFile("stderr")
	if strings.Count(se, "\n") != 1 || !strings.HasSuffix(se, "\n") {
		ts.Fatalf("stderr is not exactly one line:\n%s", se)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(se), &obj); err != nil {
		ts.Fatalf("stderr is not one JSON object: %v\n%s", err, se)
	}
	if msg, _ := obj["error"].(string); msg == "" {
		ts.Fatalf("stderr JSON has no \"error\" message: %s", se)
	}
	if code, _ := obj["code"].(string); code != args[0] {
		ts.Fatalf("stderr JSON code %q, want %q: %s", obj["code"], args[0], se)
	}
	if n, ok := obj["exit_code"].(float64); !ok || int(n) != exit {
		ts.Fatalf("stderr JSON exit_code %v, want %d: %s", obj["exit_code"], exit, se)
	}
}

func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture VAR REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture: no match for %q (with a group) in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

func cmdAppendRaw(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: appendraw FILE TEXT")
	}
	text, err := strconv.Unquote(`"` + strings.ReplaceAll(args[1], `"`, `\"`) + `"`)
	if err != nil {
		ts.Fatalf("appendraw: bad escape in %q: %v", args[1], err)
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_APPEND, 0)
	ts.Check(err)
	_, err = f.WriteString(text)
	ts.Check(err)
	ts.Check(f.Close())
}

func cmdSetRaw(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: setraw VAR TEXT")
	}
	text, err := strconv.Unquote(`"` + strings.ReplaceAll(args[1], `"`, `\"`) + `"`)
	if err != nil {
		ts.Fatalf("setraw: bad escape in %q: %v", args[1], err)
	}
	ts.Setenv(args[0], text)
}

// cmdRecrc gives line N of FILE the checksum its edited bytes hold, as a
// teammate who edits a committed line and re-checksums it would.
func cmdRecrc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: recrc FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	lines := strings.SplitAfter(string(data), "\n")
	if n < 1 || n > len(lines) {
		ts.Fatalf("recrc: %s has no line %d", args[0], n)
	}
	l := strings.TrimRight(lines[n-1], "\r\n")
	crcMember := regexp.MustCompile(`,"crc":"[0-9a-f]{8}"\}$`)
	if !crcMember.MatchString(l) {
		ts.Fatalf("recrc: line %d has no checksum at its end: %s", n, l)
	}
	body := crcMember.ReplaceAllString(l, "}")
	sum := crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))
	lines[n-1] = strings.TrimSuffix(body, "}") + fmt.Sprintf(`,"crc":"%08x"}`, sum) + lines[n-1][len(l):]
	ts.Check(os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644))
}

type lockKey struct{}

func heldLocks(ts *testscript.TestScript) map[string]*flock.Flock {
	return ts.Value(lockKey{}).(map[string]*flock.Flock)
}

func cmdHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdlock FILE")
	}
	path := ts.MkAbs(args[0])
	held := heldLocks(ts)
	if held[path] != nil {
		ts.Fatalf("holdlock: %s is already held", args[0])
	}
	fl := flock.New(path)
	ok, err := fl.TryLock()
	ts.Check(err)
	if !ok {
		ts.Fatalf("holdlock: %s is locked by someone else", args[0])
	}
	held[path] = fl
	ts.Defer(func() { _ = fl.Unlock() })
}

func cmdReleaseLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: releaselock FILE")
	}
	path := ts.MkAbs(args[0])
	held := heldLocks(ts)
	fl := held[path]
	if fl == nil {
		ts.Fatalf("releaselock: %s is not held", args[0])
	}
	ts.Check(fl.Unlock())
	delete(held, path)
}
