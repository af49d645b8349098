package cli

import (
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// kongParse parses a command line with kong alone, as bl did before the
// fast parse: the command's struct and the globals, or kong's error.
func kongParse(args []string, getenv func(string) string) (cmd any, g Globals, err error) {
	var cli CLI
	app := &App{Stdout: io.Discard, Stderr: io.Discard, Getenv: getenv, now: time.Now}
	only, unknown := commandIn(args)
	if unknown != "" {
		return nil, g, unknownCommand(unknown)
	}
	cmds := map[string]any{}
	parser, err := newParser(&cli, app, io.Discard, io.Discard, only, cmds)
	if err != nil {
		return nil, g, err
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitRequest); !ok {
				panic(r)
			}
			err = fmt.Errorf("kong exited (help)")
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		return nil, g, err
	}
	return cmds[kctx.Selected().Name], cli.Globals, nil
}

// checkFastParse asserts that what the fast parse accepts, kong parses to
// the same command and globals. It reports whether the fast parse took
// the line.
func checkFastParse(t *testing.T, raw []string, env map[string]string) bool {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	args := normalizeArgs(raw)
	only, unknown := commandIn(args)
	if unknown != "" {
		return false
	}
	cmd, g, ok := fastParse(only, args, getenv)
	if !ok {
		return false
	}
	kcmd, kg, err := kongParse(args, getenv)
	if err != nil {
		t.Errorf("bl %q: the fast parse took it, kong refuses it: %v", raw, err)
		return true
	}
	if !reflect.DeepEqual(cmd, kcmd) || g != kg {
		t.Errorf("bl %q:\n fast %#v %+v\n kong %#v %+v", raw, cmd, g, kcmd, kg)
	}
	return true
}

// hotFlagValues are values to give each kind of flag: good ones, and ones
// kong refuses.
var hotFlagValues = []string{"x", "A1", "", "-", "-5", "5", "010", "0x10", "1_0", "+3", "9223372036854775808",
	"10m", "1h30m", "90", "-1s", "a,b", `a\,b`, "a,,b", "--x", "-x", "=", "é", "\xff", "true", "false"}

// hotWords are the words that name each hand-parsed command: its name
// and its aliases.
var hotWords = map[string][]string{
	"claim": {"claim"}, "create": {"create", "add", "new"}, "heartbeat": {"heartbeat"},
	"complete": {"complete", "close", "done"}, "note": {"note", "comment"}, "version": {"version"},
	"ready": {"ready"}, "show": {"show"}, "diff": {"diff"},
}

// Every hand-parsed command is in the corpus under each word that names
// it: a command added to fastCommands is tested against kong from the
// start.
func TestFastParseCorpusNamesEveryCommand(t *testing.T) {
	for name := range fastCommands {
		want := append([]string{name}, aliasesOf(name)...)
		slices.Sort(want)
		got := slices.Sorted(slices.Values(hotWords[name]))
		if !slices.Equal(got, want) {
			t.Errorf("hotWords[%q] = %q, want %q (fastparse_test.go)", name, got, want)
		}
	}
}

// hotLines is the corpus: for each hot command (and its aliases), every
// flag of it and of the globals with every value in both forms, bool
// flags bare and with a value, arguments before and after, "--", help,
// short and unknown flags; then random mixes of those pieces.
func hotLines() [][]string {
	var lines [][]string
	var pieces [][]string
	for name, names := range hotWords {
		fc := fastCommands[name]()
		flags := append(slices.Clone(fc.flags), fastFlag{name: "dir"}, fastFlag{name: "json", isBool: true},
			fastFlag{name: "actor"}, fastFlag{name: "lock-timeout"}, fastFlag{name: "help", isBool: true}, fastFlag{name: "nope"})
		pieces = pieces[:0]
		for _, f := range flags {
			if f.isBool {
				pieces = append(pieces, []string{"--" + f.name}, []string{"--" + f.name + "=true"}, []string{"--" + f.name + "=false"})
			}
			for _, v := range hotFlagValues {
				pieces = append(pieces, []string{"--" + f.name, v}, []string{"--" + f.name + "=" + v})
			}
			pieces = append(pieces, []string{"--" + f.name})
		}
		pieces = append(pieces, []string{"A1"}, []string{"A1", "B2"}, []string{"word", "more words"}, []string{""},
			[]string{"--"}, []string{"--", "-x"}, []string{"-h"}, []string{"-"}, []string{"-x"}, []string{"claim"})
		for _, cmdName := range names {
			lines = append(lines, []string{cmdName})
			for _, p := range pieces {
				lines = append(lines, append([]string{cmdName}, p...), append(append([]string{cmdName, "A1"}, p...), "A1"))
				lines = append(lines, append(append([]string{}, p...), cmdName, "A1"))
			}
		}
		r := rand.New(rand.NewPCG(36, uint64(len(name))))
		for range 1500 {
			line := []string{names[r.IntN(len(names))]}
			for range r.IntN(6) {
				p := pieces[r.IntN(len(pieces))]
				if r.IntN(4) == 0 {
					line = append(p[:len(p):len(p)], line...)
				} else {
					line = append(line, p...)
				}
			}
			lines = append(lines, line)
		}
	}
	return lines
}

func TestFastParseMatchesKong(t *testing.T) {
	took := 0
	lines := hotLines()
	step := 1
	if raceDetector {
		step = 5 // a deterministic parse has no races to find: a sample
	}
	for _, env := range []map[string]string{nil, {"BL_DIR": "/env/dir", "BL_ACTOR": "env-actor"}} {
		for i, line := range lines {
			if i%step != 0 {
				continue
			}
			if checkFastParse(t, line, env) {
				took++
			}
		}
	}
	t.Logf("%d lines, %d taken by the fast parse", 2*len(lines)/step, took)
	if took < len(lines)/10/step {
		t.Errorf("the fast parse took %d of %d lines", took, 2*len(lines))
	}
}

// The lines agents and the benchmarks run must not fall back to kong.
func TestFastParseTakesAgentLines(t *testing.T) {
	for _, line := range []string{
		"claim --owner worker-1 --ttl 10m --json",
		"claim --owner worker-1 --id A4",
		"claim A4 --owner=worker-1 --ttl=1h",
		"--dir /tmp/x --actor me claim --owner bench --ttl 1h --json",
		"create --title paired",
		"create fix the login bug --priority 5 --label ci,auth --depends-on A1 --json",
		"add --id A2 --title service --depends-on A1 --priority 9 --phase M1",
		"heartbeat --id A1 --owner worker-1 --epoch 3",
		"heartbeat A1 --owner worker-1 --epoch 3 --progress 60 --checkpoint {}",
		"complete --id A1 --owner worker-1 --epoch 3 --note merged",
		"close A9 --duplicate-of A7",
		"note --id A1 looked at it",
		"note A1 step two done --owner w --epoch 2",
		"ready --limit 10",
		"ready --limit=10 --json",
		"ready --phase M1 --label ci --json",
		"ready --owner bob --mine",
		"--actor bob ready --any --limit 0",
		"show A1",
		"show --id A1 --json",
		"--dir /tmp/x show C000123",
		"--json show A1 --id=A1",
		"version",
		"--version",
		"version --json",
	} {
		if !checkFastParse(t, strings.Fields(line), nil) {
			t.Errorf("bl %s: not taken by the fast parse", line)
		}
	}
}

// FuzzFastParse: any command line the fast parse takes, kong parses to
// the same command and globals.
func FuzzFastParse(f *testing.F) {
	for _, l := range []string{"claim --owner a --ttl 1h", "create t --priority=-3 --label a,b", "note A1 x y",
		"complete A1 --epoch 3 --note n", "heartbeat --id A1 --progress 5", "--json close A1 --review",
		"ready --limit 10 --phase M1", "ready --owner o --any --json", "show A1 --json", "show --id=A1"} {
		f.Add(strings.ReplaceAll(l, " ", "\x00"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFastParse(t, strings.Split(s, "\x00"), nil)
	})
}

// Every flag kong knows for a hot command the fast parse knows too, and
// none reads a variable (the fast parse reads only BL_DIR and BL_ACTOR,
// for the globals): a flag added to a hot command's struct and not to
// fastparse.go would fall back to kong, and one read from the
// environment would parse differently.
func TestFastParseKnowsEveryFlag(t *testing.T) {
	for name, build := range fastCommands {
		var cli CLI
		p, err := newParser(&cli, &App{}, io.Discard, io.Discard, name, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		fc := build()
		for _, node := range p.Model.Children {
			for _, f := range node.Flags {
				if _, ok := fastFlagNamed(f.Name, fc.flags); !ok {
					t.Errorf("bl %s --%s: not in the fast parse (fastparse.go)", name, f.Name)
				}
				if len(f.Tag.Envs) > 0 {
					t.Errorf("bl %s --%s reads %v: the fast parse does not", name, f.Name, f.Tag.Envs)
				}
			}
		}
	}
}
