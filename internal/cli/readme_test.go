package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestREADMETour runs the README's 60-second tour as written, in a fresh
// git repository at $WORK/src/app, and requires each command's output to
// be what the README shows, line by line. What varies between runs is
// matched loosely: durations, byte counts, and the path prefix before
// /src/app. A command the README shows without output must print nothing
// (git's output is not checked).
func TestREADMETour(t *testing.T) {
	for _, tool := range []string{"git", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the tour uses it (.ci/run installs it)", tool)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := tourSteps(t, string(readme))
	var script strings.Builder
	script.WriteString("mkdir src/app\ncd src/app\nexec git init -q .\n")
	files := map[string]string{}
	for i, s := range steps {
		name := "want" + string(rune('a'+i))
		script.WriteString("exec sh -c " + shQuote(s.cmd+" > $WORK/"+name+".got") + "\n")
		script.WriteString("tourmatch " + name + "\n")
		files[name] = strings.Join(s.out, "\n")
	}
	for name, want := range files {
		script.WriteString("-- " + name + " --\n" + want + "\n")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tour.txtar"), []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:   dir,
		Setup: setupScript,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"tourmatch": cmdTourMatch,
		},
	})
}

type tourStep struct {
	cmd string
	out []string
}

// tourSteps reads the "$ command" lines of the tour's code block and the
// output lines under each.
func tourSteps(t *testing.T, readme string) []tourStep {
	start := strings.Index(readme, "## A 60-second tour")
	if start < 0 {
		t.Fatal("README has no 60-second tour")
	}
	var steps []tourStep
	for _, line := range strings.Split(readme[start:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "    ") {
			if len(steps) > 0 && strings.TrimSpace(line) != "" {
				break // the block ended
			}
			continue
		}
		line = strings.TrimPrefix(line, "    ")
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			if i := strings.Index(cmd, "  #"); i >= 0 {
				cmd = strings.TrimSpace(cmd[:i])
			}
			steps = append(steps, tourStep{cmd: cmd})
			continue
		}
		if len(steps) == 0 {
			t.Fatalf("README tour: output before any command: %q", line)
		}
		steps[len(steps)-1].out = append(steps[len(steps)-1].out, line)
	}
	if len(steps) < 5 {
		t.Fatalf("README tour: found only %d commands", len(steps))
	}
	return steps
}

var tourLoose = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m|h)(\d+(\.\d+)?(ms|s|m))*\b`), "<duration>"},
	{regexp.MustCompile(`\b\d+ bytes\b`), "<n> bytes"},
	{regexp.MustCompile(`\S*/src/app\b`), "/src/app"},
	{regexp.MustCompile(`\bbl-[0-9a-z]{8}\b`), "<generated id>"},
}

func loosen(s string) string {
	for _, l := range tourLoose {
		s = l.re.ReplaceAllString(s, l.with)
	}
	return strings.TrimRight(s, "\n")
}

// tourmatch NAME: $WORK/NAME.got, the command's output, is the README's
// output in file NAME, loosely as above.
func cmdTourMatch(ts *testscript.TestScript, neg bool, args []string) {
	name := args[0]
	got := ts.ReadFile(filepath.Join(ts.Getenv("WORK"), name+".got"))
	want := ts.ReadFile(filepath.Join(ts.Getenv("WORK"), name))
	if loosen(got) != loosen(want) {
		ts.Fatalf("README tour output differs:\n--- README\n%s\n--- bl printed\n%s", want, got)
	}
}

// shQuote quotes s as one testscript argument (a quote inside is doubled).
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
