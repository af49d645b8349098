package main

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layers is the package map: what each package owns and which of the
// module's packages it may import. The graph points one way, from the
// storage up to the commands; a new package, or a new edge, is a decision
// recorded here.
var layers = map[string][]string{
	// File writes whose durability bl promises (atomic replace, append, fsync).
	"fsutil": nil,
	// Finding .git around a directory, without go-git.
	"gitdir": nil,
	// The writers' OS file lock.
	"lock": nil,
	// The wire format: event and card types, codec, framing, validation,
	// errors. A leaf: it imports nothing of the module.
	"ledger/internal/wire": nil,
	// The fold: state, the op rules, selection, standing, changes. Pure:
	// wire and the standard library's non-IO packages only (TestFoldIsPure).
	"ledger/internal/fold": {"ledger/internal/wire"},
	// The store: the files of a backlog directory (ledger, segments,
	// snapshot, index, journal, config), loading and catching up, the
	// append path, compaction, the quarantine of lines that arrive
	// through git and do not read. It never imports the API above it.
	"ledger/internal/store": {"fsutil", "gitdir", "ledger/internal/fold", "ledger/internal/wire", "lock"},
	// Repair: bl doctor (diagnose, repair, the snapshot's refold) and the
	// rebase of a sync round.
	"ledger/internal/repair": {"fsutil", "gitdir", "ledger/internal/fold", "ledger/internal/store", "ledger/internal/wire", "lock"},
	// The backlog's public API: the handle, the write requests and their
	// rules (replays, stages, epics, paths), history, diff, git trees.
	"ledger": {"ledger/internal/fold", "ledger/internal/repair", "ledger/internal/store", "ledger/internal/wire", "lock"},
	// The generator of ledger's codec (go generate), and its command.
	"ledger/internal/codecgen":     nil,
	"ledger/internal/codecgen/cmd": {"ledger/internal/codecgen"},
	// History and follow: log, watch, claim --wait.
	"ledger/watch": {"ledger"},
	// What bl sync reports, shared by the git side and the command line.
	"ledger/gitsync/result": nil,
	// Git: commit, fetch, rebase onto a remote, push; the merge driver.
	"ledger/gitsync": {"fsutil", "gitdir", "ledger", "ledger/gitsync/result"},
	// The claim arbiter on NATS JetStream KV (linked by bl-git only), and
	// the test servers of its proofs.
	"internal/arbiter":          {"ledger"},
	"internal/arbiter/natstest": nil,
	// Renderings of a backlog: markdown, graphs, csv, json, html.
	"export": {"ledger"},
	// Finding cards by words, ranked: bl search, list --search, the board.
	"internal/search": {"ledger"},
	// Other trackers' exports read and planned as cards (bl import); the
	// beads labels and priorities are export's, which writes them back.
	"internal/importer": {"export", "ledger"},
	// Markdown plans read through a CommonMark parser (linked by bl-git
	// only: the parser is costly to initialise).
	"internal/importer/mdplan": {"internal/importer", "ledger"},
	// Local hooks run on events, and webhook delivery.
	"hooks":         {"fsutil", "gitdir", "ledger"},
	"hooks/webhook": {"hooks"},
	// bl run: claim, run a command, heartbeat, complete or fail.
	// internal/gitwork runs the system git for a card's work: worktrees,
	// branch heads, staged files (bl run --worktree, bl paths check).
	"internal/gitwork":    {"gitdir"},
	"internal/supervisor": {"export", "internal/gitwork", "ledger", "ledger/watch", "lock"},
	// The command line: one file per command, printing, exit codes.
	"internal/cli": {"export", "fsutil", "gitdir", "hooks", "internal/gitwork", "internal/importer", "internal/search", "internal/supervisor", "ledger", "ledger/gitsync/result", "ledger/watch", "lock"},
	// bl board: the terminal board (Bubble Tea), linked by bl-git only.
	"internal/board": {"export", "internal/search", "ledger", "ledger/watch"},
	// bl mcp: the backlog as MCP tools over stdio.
	"internal/mcpserver": {"internal/cli"},
	// bl serve: board, JSON API, event stream, metrics.
	"internal/serve": {"export", "internal/cli", "ledger", "ledger/watch", "lock"},
	// bl-git's side of the command line: sync, remote claims, serve, mcp.
	"internal/cli/gitcli": {"hooks/webhook", "internal/arbiter", "internal/board", "internal/cli", "internal/importer/mdplan", "internal/mcpserver", "internal/serve", "ledger", "ledger/gitsync"},
	// The binaries.
	"cmd/bl":     {"internal/cli"},
	"cmd/bl-git": {"internal/cli", "internal/cli/gitcli"},
	// The commands, built once per go test run for the tests that run them.
	"internal/testbin": nil,
	// Benchmarks, the browser test helper and the process-level proofs.
	"internal/benchrun":           {"ledger"},
	"internal/benchrun/linkfloor": nil,
	// make dist: the release archives; make house: the house's figures.
	"internal/dist":        nil,
	"internal/house":       nil,
	"internal/browsertest": nil,
	"proof":                {"internal/arbiter/natstest", "ledger"},
}

// floor is the part of the house a package belongs to: its first path
// element (ledger, lock, hooks, export, fsutil, gitdir; internal, the
// application; cmd, the binaries).
func floor(pkg string) string {
	f, _, _ := strings.Cut(pkg, "/")
	return f
}

// TestNoArrowBackUp: the floors of the house import each other one way.
// An import from one floor into another that imports it back (directly
// or through others) is an arrow back up the house — the library under
// ledger/, hooks/ or export/ reaching into internal/, or internal/ into a
// package that imports internal/ — and fails, whatever the package map
// allows.
func TestNoArrowBackUp(t *testing.T) {
	edges := map[string]map[string]bool{}
	for pkg, deps := range layers {
		for _, dep := range deps {
			if a, b := floor(pkg), floor(dep); a != b {
				if edges[a] == nil {
					edges[a] = map[string]bool{}
				}
				edges[a][b] = true
			}
		}
	}
	reaches := func(from, to string) bool {
		seen, todo := map[string]bool{from: true}, []string{from}
		for len(todo) > 0 {
			f := todo[0]
			todo = todo[1:]
			for next := range edges[f] {
				if next == to {
					return true
				}
				if !seen[next] {
					seen[next] = true
					todo = append(todo, next)
				}
			}
		}
		return false
	}
	for pkg, deps := range layers {
		for _, dep := range deps {
			if a, b := floor(pkg), floor(dep); a != b && reaches(b, a) {
				t.Errorf("%s imports %s, but %s/ imports %s/: an arrow back up the house", pkg, dep, b, a)
			}
		}
	}
}

// TestLayers: every package of the module is in the package map, and
// imports only what the map allows.
func TestLayers(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	const mod = "github.com/bl-backlog/bl/"
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		seen[pkg] = true
		allowed, ok := layers[pkg]
		if !ok {
			t.Errorf("package %s is not in the package map (cmd/bl/layers_test.go): say what it owns and what it may import", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if dep, ok := strings.CutPrefix(imp, mod); ok && !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which the package map does not allow", pkg, dep)
			}
		}
	}
	for pkg := range layers {
		if !seen[pkg] {
			t.Errorf("the package map lists %s, which does not exist", pkg)
		}
	}
}

// pureStd is every standard package the fold may import: none of them
// opens, reads or writes a file, or reads a clock or the environment, by
// itself. (fmt can print to a writer, but the fold is given none.)
var pureStd = []string{"bytes", "cmp", "errors", "fmt", "maps", "math", "math/bits", "path", "slices", "sort", "strconv", "strings", "time", "unicode", "unicode/utf8"}

// TestFoldIsPure: ledger/internal/fold imports only the wire package and
// pureStd, and calls no clock (time.Now, time.Since, time.Until), so the
// same events always fold to the same state. The wire package, a leaf,
// imports no package that reaches a file or the network either.
func TestFoldIsPure(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	const mod = "github.com/bl-backlog/bl/"
	imports := func(pkg string) []string {
		out, err := exec.Command(goTool, "list", "-f", "{{join .Imports \" \"}}", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, imp := range imports("ledger/internal/fold") {
		if imp != mod+"ledger/internal/wire" && !slices.Contains(pureStd, imp) {
			t.Errorf("ledger/internal/fold imports %s: the fold imports only wire and packages that reach no file (pureStd)", imp)
		}
	}
	for _, imp := range imports("ledger/internal/wire") {
		switch {
		case strings.HasPrefix(imp, mod):
			t.Errorf("ledger/internal/wire imports %s: it is a leaf", imp)
		case imp == "os" || imp == "io/fs" || imp == "syscall" || strings.HasPrefix(imp, "os/") || strings.HasPrefix(imp, "net"):
			t.Errorf("ledger/internal/wire imports %s: the format reads and writes bytes it is given, never files", imp)
		}
	}
	files, err := filepath.Glob("../../ledger/internal/fold/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fold sources found: %v", err)
	}
	clock := regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|Tick|NewTimer|NewTicker)\b`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := clock.Find(b); m != nil {
			t.Errorf("%s calls %s: the fold reads no clock; now is the event's (WriterClock) or the caller's", filepath.Base(f), m)
		}
	}
}

// TestOneJSONLibrary: hand-written code reads and writes JSON with one
// library, goccy/go-json (fast, and encoding/json's API); the generated
// codec is the wire package's own, and tests may use encoding/json as the
// reference decoder they compare against.
func TestOneJSONLibrary(t *testing.T) {
	generated := regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != "../..") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, c := range f.Comments {
			if generated.MatchString(c.Text()) || generated.MatchString("// "+strings.TrimSpace(c.Text())) {
				return nil
			}
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"encoding/json"` {
				t.Errorf("%s imports encoding/json: hand-written code uses github.com/goccy/go-json", strings.TrimPrefix(path, "../../"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
