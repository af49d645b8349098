package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// TestExportCommandLine: every spelling of one export names it the same
// way in the board's header, so a board written one way checks clean when
// checked another way.
func TestExportCommandLine(t *testing.T) {
	a := ExportCmd{Status: []string{"blocked,ready"}, Phase: []string{"M2", "M1", "M2"}, Graph: true, Title: "Sprint 3"}
	b := ExportCmd{Status: []string{"ready", "blocked"}, Phase: []string{"M1", "M2"}, Graph: true, Title: "Sprint 3"}
	sa, _ := parseStatuses(splitList(a.Status))
	sb, _ := parseStatuses(splitList(b.Status))
	want := "bl export --format markdown --status ready,blocked --phase M1 --phase M2 --graph --title 'Sprint 3'"
	if got := a.command(export.Markdown, sa); got != want {
		t.Errorf("command = %s\nwant      %s", got, want)
	}
	if a.command(export.Markdown, sa) != b.command(export.Markdown, sb) {
		t.Error("two spellings of one export give different command lines")
	}
	if got := (&ExportCmd{Graph: true}).command(export.CSV, nil); got != "bl export --format csv" {
		t.Errorf("--graph leaked into a csv command line: %s", got)
	}
}

func TestExportShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"BACKLOG.md":     "BACKLOG.md",
		"docs/board.md":  "docs/board.md",
		"my board.md":    "'my board.md'",
		"it's":           `'it'\''s'`,
		"":               "''",
		"$(rm -rf)":      "'$(rm -rf)'",
		"M2 — Ärger":     "'M2 — Ärger'",
		"ready,blocked":  "ready,blocked",
		"a`b":            "'a`b'",
		"semi;colon":     "'semi;colon'",
		"star*":          "'star*'",
		"new\nline":      "'new\nline'",
		"100%":           "100%",
		"user@host:path": "user@host:path",
	} {
		if got := exportShellQuote(in); got != want {
			t.Errorf("exportShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestExportFormatChoice(t *testing.T) {
	for _, tc := range []struct {
		cmd  ExportCmd
		want export.Format
	}{
		{ExportCmd{}, export.Markdown},
		{ExportCmd{Output: "cards.csv"}, export.CSV},
		{ExportCmd{Check: "docs/dag.mmd"}, export.Mermaid},
		{ExportCmd{Output: "BACKLOG"}, export.Markdown},
		{ExportCmd{Output: "x.csv", Format: "json"}, export.JSON},
	} {
		if got, err := tc.cmd.format(); err != nil || got != tc.want {
			t.Errorf("%+v: format %q, %v; want %q", tc.cmd, got, err, tc.want)
		}
	}
	if _, err := (&ExportCmd{Format: "pdf"}).format(); err == nil {
		t.Error("--format pdf accepted")
	} else if code, _ := classify(err, nil); code != exitUsage {
		t.Errorf("--format pdf exits %d, want %d", code, exitUsage)
	}
}

func TestWriteExportFileKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "BACKLOG.md")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeExportFile(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(got) != "new\n" || st.Mode().Perm() != 0o600 {
		t.Errorf("file %q mode %v", got, st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestExportEndToEnd runs the command in-process against a fresh backlog:
// every format renders, and --check accepts what -o wrote, whatever line
// endings the file got on the way.
func TestExportEndToEnd(t *testing.T) {
	dir := t.TempDir()
	run1 := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(Extensions{}, append([]string{"--dir", filepath.Join(dir, ".backlog")}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	t.Chdir(dir)
	if code, _, e := run1("init"); code != 0 {
		t.Fatalf("init: %s", e)
	}
	for _, args := range [][]string{
		{"create", "--id", "A1", "--title", "schema", "--phase", "M1"},
		{"create", "--id", "A2", "--title", "tëst | \"quoted\"", "--depends-on", "A1", "--phase", "M1"},
	} {
		if code, _, e := run1(args...); code != 0 {
			t.Fatalf("%v: %s", args, e)
		}
	}
	for _, f := range export.Formats() {
		code, out, e := run1("export", "--format", string(f))
		if code != 0 || out == "" && f != export.JSONL {
			t.Errorf("export --format %s: exit %d, %d bytes, %s", f, code, len(out), e)
		}
	}
	if code, _, e := run1("export", "-o", "cards.csv"); code != 0 {
		t.Fatalf("export -o cards.csv: %s", e)
	}
	if code, out, e := run1("export", "--check", "cards.csv"); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("check of a fresh csv: exit %d %s %s", code, out, e)
	}
	if code, _, e := run1("export", "-o", "BACKLOG.md"); code != 0 {
		t.Fatalf("export -o BACKLOG.md: %s", e)
	}
	raw, _ := os.ReadFile("BACKLOG.md")
	if err := os.WriteFile("BACKLOG.md", bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, e := run1("export", "--check", "BACKLOG.md"); code != 0 {
		t.Errorf("check of a CRLF checkout: exit %d: %s", code, e)
	}
	b, err := ledger.Open(filepath.Join(dir, ".backlog"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cards, err := b.List(ledger.Filter{}, ledger.SortClaim)
	if err != nil || len(cards) != 2 {
		t.Fatalf("list: %v %d", err, len(cards))
	}
	st, err := b.Standings(cards)
	if err != nil {
		t.Fatal(err)
	}
	waiting := map[string][]string{}
	for i, c := range cards {
		if c.Status == ledger.StatusReady && len(st[i].WaitingOn) > 0 {
			waiting[c.ID] = st[i].WaitingOn
		}
	}
	want, _ := export.Bytes(export.Markdown, cards, export.Options{Command: "bl export --format markdown", WaitingOn: waiting})
	if got, _ := os.ReadFile("BACKLOG.md"); !bytes.Equal(bytes.ReplaceAll(got, []byte("\r\n"), []byte("\n")), want) {
		t.Errorf("the CLI's board differs from export.RenderMarkdown of the listed cards")
	}
}
