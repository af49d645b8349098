package mcpserver_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEListsEveryTool: README's list of the MCP tools is the list
// the server gives a client, no more and no fewer.
func TestREADMEListsEveryTool(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const lead = "`bl mcp` serves the backlog as MCP tools:"
	s := string(readme)
	i := strings.Index(s, lead)
	if i < 0 {
		t.Fatalf("README has no paragraph starting %q", lead)
	}
	para, _, _ := strings.Cut(s[i+len(lead):], "Their arguments")
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(para, -1) {
		listed = append(listed, m[1])
	}
	cs, _ := connect(t)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, tl := range lt.Tools {
		served = append(served, tl.Name)
	}
	slices.Sort(listed)
	slices.Sort(served)
	if !slices.Equal(listed, served) {
		t.Errorf("README lists the tools %v;\nbl mcp serves %v", listed, served)
	}
}
