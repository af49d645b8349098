package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/internal/cli"
)

// TestComingFromCommands: every bl command in docs/COMING_FROM.md's table
// parses (run with --help, which stops before anything runs), so the
// table cannot name a command or flag bl does not have.
func TestComingFromCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "COMING_FROM.md"))
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile("`(bl [^`]*)`")
	n := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 4 || !strings.HasPrefix(line, "| ") {
			continue
		}
		for _, m := range span.FindAllStringSubmatch(cells[len(cells)-1], -1) {
			args := append(shellWords(m[1])[1:], "--help")
			var out, errb bytes.Buffer
			if code := cli.Main(cli.Extensions{}, args, &out, &errb); code != 0 {
				t.Errorf("%s: exit %d: %s", m[1], code, errb.String())
			}
			n++
		}
	}
	if n < 25 {
		t.Fatalf("found %d bl commands in the table, want at least 25", n)
	}
}

// shellWords splits a command line on spaces, keeping double-quoted words
// whole.
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}
