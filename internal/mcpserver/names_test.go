package mcpserver_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger"
)

// TestMCPRefusesHiddenNames: an owner, assignee or actor that a terminal
// would not show as written (a bidirectional control, whitespace other
// than the space) is refused as the command line refuses it (exit code 2),
// and nothing is written.
func TestMCPRefusesHiddenNames(t *testing.T) {
	cs, backlog := connect(t)
	call(t, cs, "create", map[string]any{"title": "x", "id": "X"})
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"claim", map[string]any{"owner": "me\u202e<b>", "id": "X"}, `owner "me\u202e<b>" holds a bidirectional control`},
		{"claim", map[string]any{"owner": "me\u00a0too"}, `owner "me\u00a0too" holds whitespace`},
		{"assign", map[string]any{"id": "X", "assignee": "b\u2028c"}, `assignee "b\u2028c" holds whitespace`},
		{"create", map[string]any{"title": "y", "assignee": "b\u2066c\u2069"}, `assignee "b\u2066c\u2069" holds a bidirectional control`},
	} {
		_, v := call(t, cs, tc.tool, tc.args, true)
		if field(v, "code") != "invalid" || field(v, "exit_code") != 2.0 || !strings.Contains(field(v, "error").(string), tc.want) {
			t.Errorf("%s %v = %v, want exit 2 saying %s", tc.tool, tc.args, v, tc.want)
		}
	}
	// An actor (BL_ACTOR) the terminal would show as another name.
	hidden := connectAs(t, filepath.Dir(backlog), "agent\u202ehost")
	_, v := call(t, hidden, "note", map[string]any{"id": "X", "text": "hi"}, true)
	if field(v, "code") != "invalid" || !strings.Contains(field(v, "error").(string), `actor "agent\u202ehost" holds a bidirectional control`) {
		t.Errorf("note as a hidden actor = %v", v)
	}
	b, err := ledger.Open(backlog, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := b.Get("X")
	if err != nil || c.Version != 1 {
		t.Fatalf("card X after the refused calls: version %d, %v", c.Version, err)
	}
	if cards, _ := b.List(ledger.Filter{}, ""); len(cards) != 1 {
		t.Fatalf("cards: %v", cards)
	}
}
