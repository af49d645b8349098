package supervisor

import (
	"slices"
	"testing"
)

func TestExpandArgs(t *testing.T) {
	got := expandArgs([]string{"-p", "card {id} epoch {epoch} by {owner} in {worktree}", "{ID}", "{id}{id}", "f() { :; }", "{other}"},
		"A1", "agent 7", 3, "/r/.git/bl-worktrees/A1")
	want := []string{"-p", "card A1 epoch 3 by agent 7 in /r/.git/bl-worktrees/A1", "{ID}", "A1A1", "f() { :; }", "{other}"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	// A value holding a placeholder is not expanded again.
	if got := expandArgs([]string{"{owner} {id}"}, "B", "{id}", 1, ""); got[0] != "{id} B" {
		t.Fatalf("got %q", got[0])
	}
}
