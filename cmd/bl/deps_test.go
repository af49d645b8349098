package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoGit: bl does not link go-git, nor the package built on it; every
// call would pay for their initialisation. Git work runs in bl-git.
func TestNoGit(t *testing.T) {
	isGit := func(p string) bool {
		return strings.Contains(p, "go-git") || strings.HasSuffix(p, "/ledger/gitsync") || strings.HasSuffix(p, "/cli/gitcli")
	}
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl") {
		if isGit(p) {
			t.Errorf("cmd/bl depends on %s", p)
		}
	}
	// The check would pass vacuously if the names moved: bl-git has them.
	found := false
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl-git") {
		found = found || strings.HasSuffix(p, "/ledger/gitsync")
	}
	if !found {
		t.Error("cmd/bl-git does not depend on ledger/gitsync")
	}
}

// TestGitSeamsAreStdlib: what bl links of the git side, the package that
// finds .git on every call and the value bl sync prints, uses the
// standard library alone, so neither can pull git in by the back door.
func TestGitSeamsAreStdlib(t *testing.T) {
	for _, pkg := range []string{"github.com/bl-backlog/bl/gitdir", "github.com/bl-backlog/bl/ledger/gitsync/result"} {
		for _, p := range deps(t, pkg) {
			if p != pkg && strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				t.Errorf("%s depends on %s", pkg, p)
			}
		}
	}
}

// TestNoServer: bl does not link bl serve, the metrics library, an HTTP
// stack or the browser driver its tests use; bl serve and webhooks run in
// bl-git.
func TestNoServer(t *testing.T) {
	heavy := func(p string) bool {
		return strings.Contains(p, "prometheus") || strings.Contains(p, "chromedp") || p == "net/http" ||
			strings.HasSuffix(p, "/bl/serve") || strings.HasSuffix(p, "/hooks/webhook")
	}
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl") {
		if heavy(p) {
			t.Errorf("cmd/bl depends on %s", p)
		}
	}
	// Not vacuous: bl-git has them.
	git := map[string]bool{}
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl-git") {
		git[p] = true
	}
	for _, p := range []string{"github.com/bl-backlog/bl/internal/serve", "github.com/prometheus/client_golang/prometheus", "net/http", "github.com/bl-backlog/bl/hooks/webhook"} {
		if !git[p] {
			t.Errorf("cmd/bl-git does not depend on %s", p)
		}
	}
	// The browser driver is for tests only, in either binary.
	for p := range git {
		if strings.Contains(p, "chromedp") {
			t.Errorf("cmd/bl-git depends on %s", p)
		}
	}
}

// TestNoMCP: bl does not link the MCP SDK nor the server built on it; bl
// mcp runs in bl-git. Every call would pay for their start-up.
func TestNoMCP(t *testing.T) {
	isMCP := func(p string) bool {
		return strings.Contains(p, "modelcontextprotocol") || strings.Contains(p, "jsonschema-go") || strings.HasSuffix(p, "/internal/mcpserver")
	}
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl") {
		if isMCP(p) {
			t.Errorf("cmd/bl depends on %s", p)
		}
	}
	// Not vacuous: bl-git has them.
	found := false
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl-git") {
		found = found || strings.HasSuffix(p, "/internal/mcpserver")
	}
	if !found {
		t.Error("cmd/bl-git does not depend on internal/mcpserver")
	}
}

// deps lists the packages pkg links, as go list -deps does; the test is
// skipped without the go tool.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestNoBoard: bl does not link bl board's terminal libraries (Bubble
// Tea, lipgloss, termenv) nor the board itself; bl board runs in bl-git.
func TestNoBoard(t *testing.T) {
	isBoard := func(p string) bool {
		return strings.Contains(p, "charmbracelet") || strings.Contains(p, "muesli/termenv") || strings.HasSuffix(p, "/internal/board")
	}
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl") {
		if isBoard(p) {
			t.Errorf("cmd/bl depends on %s", p)
		}
	}
	found := false
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl-git") {
		found = found || strings.HasSuffix(p, "/internal/board")
	}
	if !found {
		t.Error("cmd/bl-git does not depend on internal/board")
	}
}

// TestNoArbiterClient: bl does not link the NATS client (the claim
// arbiter's, in bl-git, which bl hands the command to), and neither binary
// links the NATS server its proofs start.
func TestNoArbiterClient(t *testing.T) {
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl") {
		if strings.Contains(p, "nats-io") || strings.HasSuffix(p, "/internal/arbiter") {
			t.Errorf("cmd/bl depends on %s", p)
		}
	}
	found := false
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl-git") {
		found = found || p == "github.com/nats-io/nats.go/jetstream"
		if strings.Contains(p, "nats-server") || strings.HasSuffix(p, "/natstest") {
			t.Errorf("cmd/bl-git depends on %s", p)
		}
	}
	if !found {
		t.Error("cmd/bl-git does not depend on the NATS JetStream client")
	}
}

// TestNoMarkdownParser: bl does not link the CommonMark parser bl import
// --from markdown reads plans with (its initialisers cost every call
// thousands of allocations); bl hands that import to bl-git.
func TestNoMarkdownParser(t *testing.T) {
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl") {
		if strings.Contains(p, "yuin/goldmark") || strings.HasSuffix(p, "/importer/mdplan") {
			t.Errorf("cmd/bl depends on %s", p)
		}
	}
	found := false
	for _, p := range deps(t, "github.com/bl-backlog/bl/cmd/bl-git") {
		found = found || strings.HasSuffix(p, "/importer/mdplan")
	}
	if !found {
		t.Error("cmd/bl-git does not depend on importer/mdplan")
	}
}
