package cli

import (
	"io"
	"strings"
	"testing"
	"time"
)

// parse parses a command line as bl does and runs nothing: the command's
// struct as the flags and arguments left it, or the usage error bl would
// report (exit 2). The pattern of gh's runF: what a command parses is
// tested here, in microseconds; the scripts (testdata/script) test what
// it does.
func parse(t *testing.T, args ...string) (any, error) {
	t.Helper()
	var cli CLI
	app := &App{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }, now: time.Now}
	args = normalizeArgs(args)
	only, unknown := commandIn(args)
	if unknown != "" {
		return nil, unknownCommand(unknown)
	}
	cmds := map[string]any{}
	parser, err := newParser(&cli, app, io.Discard, io.Discard, only, cmds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitRequest); !ok {
				panic(r)
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		return nil, err
	}
	return cmds[commandName(kctx.Selected().Name)], nil
}

// words splits an example line the way a shell would for the simple
// lines help texts hold: single and double quotes; ok false for a line
// that needs a real shell (pipes, substitutions, redirections, ...).
func words(line string) (out []string, ok bool) {
	if strings.ContainsAny(line, "|&;<>`\\") || strings.Contains(line, "$(") {
		return nil, false
	}
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case r == '#':
			return out, quote == 0 && !in
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, quote == 0
}

// exampleVars are the shell variables the examples use, with values.
var exampleVars = strings.NewReplacer("$ME", "me", "$BL_CARD", "C1", "$BL_OWNER", "w1", "$BL_EPOCH", "1")

// TestEveryExampleParses: every example line of every command's help
// parses, as given, into that command.
func TestEveryExampleParses(t *testing.T) {
	n := 0
	for _, c := range commands {
		h, ok := c.new().(interface{ Help() string })
		if !ok {
			continue
		}
		for _, line := range strings.Split(h.Help(), "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "bl "+c.name+" ") && line != "bl "+c.name {
				continue
			}
			args, ok := words(line)
			if !ok {
				continue
			}
			for i, a := range args {
				args[i] = exampleVars.Replace(a)
			}
			if _, err := parse(t, args[1:]...); err != nil {
				t.Errorf("%s: the example %q does not parse: %v", c.name, line, err)
			}
			checkFastParse(t, args[1:], nil) // the agents' commands: as kong parses it
			n++
		}
	}
	if n < 50 {
		t.Errorf("only %d example lines parsed: the help texts' examples were not found", n)
	}
}

// TestParse: what a few command lines parse into, and the usage errors of
// others (exit 2), without running anything.
func TestParse(t *testing.T) {
	v, err := parse(t, "claim", "--owner", "w8", "--ttl", "1500ms", "--id", "R1")
	if c, _ := v.(*ClaimCmd); err != nil || c == nil || c.Owner != "w8" || c.TTL != 1500*time.Millisecond {
		t.Errorf("claim: %+v %v", v, err)
	}
	if v, err := parse(t, "claim"); err != nil || v.(*ClaimCmd).TTL != 15*time.Minute {
		t.Errorf("claim's default ttl: %+v %v", v, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"handoff", "A2", "--owner", "w1", "--epoch", "1"}, "missing flags: --to"},
		{[]string{"claim", "--ttl", "soon"}, "--ttl"},
		{[]string{"claim", "--bogus"}, "unknown flag --bogus"},
		{[]string{"create", "--title", "t", "--priority", "high"}, "--priority"},
		{[]string{"frobnicate"}, "frobnicate"},
	} {
		if _, err := parse(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error naming %q", tc.args, err, tc.want)
		}
	}
}

// TestPlainParseErrors: the parser's errors for a flag with no value and a
// duration with no unit are said plainly.
func TestPlainParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--title", "t", "--priority"}, "--priority needs a value"},
		{[]string{"claim", "--ttl", "5"}, "--ttl 5: a duration needs a unit (5s, 5m or 5h)"},
		{[]string{"claim", "--bogus"}, "unknown flag --bogus"},
	} {
		_, err := parse(t, tc.args...)
		if err == nil || plainParseError(err.Error()) != tc.want && !strings.Contains(plainParseError(err.Error()), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A command line that would cost kong's scanner too much (flags, and
// words after "--", times arguments) is refused as a usage error before
// kong reads it: 20,000 flags took gigabytes. A long line of words with
// a few flags, and as many flags as a command needs, still parse.
func TestScanWorkRefused(t *testing.T) {
	run := func(args []string) (int, string) {
		var out, errb strings.Builder
		a := &App{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, now: time.Now}
		return runApp(a, args), errb.String()
	}
	dir := t.TempDir() // no backlog: a line that parses ends in no_backlog (exit 3)
	line := func(head []string, n int, word string, tail ...string) []string {
		args := append([]string{"--dir", dir}, head...)
		for range n {
			args = append(args, word)
		}
		return append(args, tail...)
	}
	for _, args := range [][]string{
		line([]string{"search", "--json"}, 5000, "--json", "w"), // 5,003 flags
		line([]string{"search", "--json", "--"}, 6000, "w"),     // 6,000 words after "--"
	} {
		code, stderr := run(args)
		if code != exitUsage || !strings.Contains(stderr, `"code":"usage"`) || !strings.Contains(stderr, "too many for one command line") {
			t.Errorf("bl %s (%d arguments): exit %d, stderr %.300q; want exit 2, a usage error", args[2], len(args), code, stderr)
		}
	}
	for _, args := range [][]string{
		line([]string{"search", "--json"}, 100_000, "w"),
		line([]string{"search", "--json", "--"}, 2000, "w"),
		line([]string{"search", "w"}, 1100, "--lock-timeout=1s"),
	} {
		if code, stderr := run(args); code != exitNotFound {
			t.Errorf("bl %s (%d arguments): exit %d, want %d: %.300s", args[2], len(args), code, exitNotFound, stderr)
		}
	}
}
