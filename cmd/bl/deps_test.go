package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoGit: bl does not link go-git, nor the package built on it; every
// call would pay for their initialisation. Git work runs in bl-git.
func TestNoGit(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	deps := func(pkg string) []string {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	isGit := func(p string) bool {
		return strings.Contains(p, "go-git") || strings.HasSuffix(p, "/ledger/gitsync") || strings.HasSuffix(p, "/cli/gitcli")
	}
	for _, p := range deps("github.com/bl-backlog/bl/cmd/bl") {
		if isGit(p) {
			t.Errorf("cmd/bl depends on %s", p)
		}
	}
	// The check would pass vacuously if the names moved: bl-git has them.
	found := false
	for _, p := range deps("github.com/bl-backlog/bl/cmd/bl-git") {
		found = found || strings.HasSuffix(p, "/ledger/gitsync")
	}
	if !found {
		t.Error("cmd/bl-git does not depend on ledger/gitsync")
	}
}
