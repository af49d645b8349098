package serve

import (
	"strings"
	"testing"
)

// TestWritesRefuseHiddenActor: a board whose actor (BL_ACTOR) a terminal
// would not show as written (a bidirectional control) writes nothing: each
// write is refused as invalid input, as on the command line.
func TestWritesRefuseHiddenActor(t *testing.T) {
	f := newFixture(t, Options{AllowWrites: true, Actor: "ops\u202e<b>"})
	c := f.create("x")
	resp, body := f.post("/api/cards/"+c.ID+"/note", f.s.csrf, `{"text": "hi"}`)
	if resp.StatusCode != 400 || !strings.Contains(string(body), `actor \"ops\\u202e<b>\" holds a bidirectional control`) {
		t.Fatalf("note as a hidden actor: %d %s", resp.StatusCode, body)
	}
	if got, err := f.b.Get(c.ID); err != nil || got.Version != 1 {
		t.Fatalf("card after the refused write: version %d, %v", got.Version, err)
	}
}
