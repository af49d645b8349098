package board

import (
	"os"
	"strings"
	"testing"
)

// TestREADMENamesTheLanes: README and bl board --help name the board's
// lanes as it draws them.
func TestREADMENamesTheLanes(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "lanes by state (" + strings.Join(laneNames, ", ") + ")"
	if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want) {
		t.Errorf("README does not say %q", want)
	}
	help, err := os.ReadFile("../cli/cmd_board.go")
	if err != nil {
		t.Fatal(err)
	}
	want = "lanes by where cards stand (" + strings.Join(laneNames, ", ") + ")"
	if !strings.Contains(strings.Join(strings.Fields(string(help)), " "), want) {
		t.Errorf("bl board --help does not say %q", want)
	}
}
