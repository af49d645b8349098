package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLineVersion: a line carries the lowest version that reads it right,
// so a v1 reader keeps reading ordinary lines and refuses, rather than
// misreads or sets aside, the ones it cannot read.
func TestLineVersion(t *testing.T) {
	e := newEnv(t)
	m := Mutation{Actor: "a"}
	e.create("A")
	if _, err := e.b.Note(e.ctx, NoteRequest{Mutation: m, ID: "A", Text: "looked"}); err != nil {
		t.Fatal(err)
	}
	c := e.claim("A", "w1", time.Minute)
	if _, err := e.b.Fail(e.ctx, LeaseRequest{Mutation: m, ID: "A", Owner: "w1", Epoch: c.ClaimEpoch, Reason: "boom"}); err != nil {
		t.Fatal(err)
	}
	want := map[Op]int{OpCreate: 1, OpNote: 2, OpClaim: 1, OpFail: 2}
	raw, err := os.ReadFile(filepath.Join(e.b.Dir(), LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.SplitAfter(raw, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		ev, err := DecodeLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if ev.V != want[ev.Op] {
			t.Errorf("%s line has v%d, want v%d: %s", ev.Op, ev.V, want[ev.Op], line)
		}
	}
	if clock := time.Now(); (&Event{Op: OpClaim, Clock: &clock}).LineVersion() != 2 {
		t.Error("a line carrying the writer's clock is not v2")
	}
}
