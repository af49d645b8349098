package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// seeded returns an env with three cards, a claim and a completion.
func seeded(t *testing.T) *env {
	e := newEnv(t)
	e.create("A")
	e.create("B", func(r *CreateRequest) { r.DependsOn = []string{"A"} })
	e.create("C")
	e.claim("A", "w1", time.Minute)
	if _, err := e.b.Complete(e.ctx, LeaseRequest{Mutation: m, ID: "C"}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(data []byte) {
	e.t.Helper()
	if err := os.WriteFile(e.ledgerPath(), data, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func TestDiagnoseClean(t *testing.T) {
	e := seeded(t)
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corrupt || rep.TornTail != nil || len(rep.Damage) != 0 || rep.Lines != 5 || rep.Cards != 3 {
		t.Fatalf("report = %+v", rep)
	}
	e.clk.Advance(2 * time.Minute)
	rep, _ = Diagnose(e.dir, e.clk.Now())
	if len(rep.ExpiredLeases) != 1 || rep.ExpiredLeases[0].Card != "A" || rep.ExpiredLeases[0].Owner != "w1" || rep.ExpiredLeases[0].Epoch != 1 {
		t.Fatalf("expired = %+v", rep.ExpiredLeases)
	}
}

func TestDoctorTornTailRepair(t *testing.T) {
	e := seeded(t)
	good := e.bytes()
	e.write(append(append([]byte{}, good...), []byte(`{"v":1,"id":"abc`)...))
	rep, err := Diagnose(e.dir, e.clk.Now())
	if err != nil || rep.Corrupt || rep.TornTail == nil || rep.TornTail.Offset != int64(len(good)) {
		t.Fatalf("diagnose = %+v, %v", rep, err)
	}
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.TornTail != nil || len(after.Repaired) != 1 {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	if !bytes.Equal(e.bytes(), good) {
		t.Fatal("repair changed good lines")
	}
	broken, _ := os.ReadFile(filepath.Join(e.dir, BrokenFile))
	if string(broken) != `{"v":1,"id":"abc`+"\n" {
		t.Fatalf(".broken = %q", broken)
	}
}

// TestDoctorUnionMergedLedger: lines out of order and repeated are counted,
// not damage, and repair leaves them as they are.
func TestDoctorUnionMergedLedger(t *testing.T) {
	e := seeded(t)
	lines := e.lines()
	// A duplicate of line 2 at the end, and lines 3 and 4 swapped.
	var dup []byte
	for _, i := range []int{0, 1, 3, 2, 4, 1} {
		dup = append(dup, lines[i]...)
	}
	e.write(dup)
	if _, err := Open(e.dir, Options{}); err != nil {
		t.Fatalf("Open of a union-merged ledger: %v", err)
	}
	rep, _ := Diagnose(e.dir, e.clk.Now())
	if rep.Corrupt || len(rep.Damage) != 0 || rep.Unsorted != 1 || rep.Repeated != 1 || rep.Cards != 3 {
		t.Fatalf("report = %+v", rep)
	}
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.Corrupt || len(after.Repaired) != 0 {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	if !bytes.Equal(e.bytes(), dup) {
		t.Fatal("repair rewrote a ledger that needs nothing")
	}
}

// TestDoctorConflictMarkers: a ledger holding git conflict markers is
// refused with an error that says so and names the repair; doctor reports
// them in one entry; repair keeps every event between them, once, in
// order.
func TestDoctorConflictMarkers(t *testing.T) {
	e := seeded(t)
	lines := e.lines()
	data := bytes.Join([][]byte{lines[0], lines[1], []byte("<<<<<<< HEAD\n"), lines[2], lines[3], []byte("||||||| base\n"),
		[]byte("=======\n"), lines[3], lines[4], []byte(">>>>>>> feature\n")}, nil)
	e.write(data)
	_, err := Open(e.dir, Options{})
	ce := wantCorrupt(t, err, e.ledgerPath(), 3, int64(len(lines[0])+len(lines[1])))
	if !strings.Contains(ce.Error(), "git conflict markers") || !strings.Contains(ce.Error(), "bl doctor --repair") {
		t.Fatalf("error = %v", ce)
	}
	rep, _ := Diagnose(e.dir, e.clk.Now())
	if !rep.Corrupt || len(rep.Damage) != 1 || rep.Damage[0].Kind != "conflict-markers" || !rep.Damage[0].Repairable || rep.Damage[0].Line != 3 {
		t.Fatalf("damage = %+v", rep.Damage)
	}
	if !strings.Contains(rep.Damage[0].Reason, "4 line(s) of git conflict markers") {
		t.Fatalf("reason = %q", rep.Damage[0].Reason)
	}
	after, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if err != nil || after.Corrupt || len(after.Repaired) != 1 || !strings.Contains(after.Repaired[0], "dropped 4 line(s) of git conflict markers") {
		t.Fatalf("repair = %+v, %v", after, err)
	}
	if !bytes.Equal(e.bytes(), bytes.Join(lines, nil)) {
		t.Fatalf("repaired ledger:\n%s", e.bytes())
	}
}

func TestDoctorRefusesLossyRepair(t *testing.T) {
	e := seeded(t)
	data := e.bytes()
	i := bytes.Index(data, []byte(`"card":"B"`))
	data[i+8] = 'X' // flip a byte in the middle of line 2
	e.write(data)
	rep, err := Repair(e.ctx, e.dir, time.Second, e.clk.Now())
	if !errors.Is(err, ErrCorrupt) || rep == nil || rep.Damage[0].Line != 2 || rep.Damage[0].Kind != "checksum" {
		t.Fatalf("repair = %+v, %v", rep, err)
	}
	if !strings.Contains(err.Error(), "restore it from git (git log -p -- "+e.ledgerPath()+")") {
		t.Errorf("error does not say what to do: %v", err)
	}
	if !bytes.Equal(e.bytes(), data) {
		t.Fatal("a refused repair changed the ledger")
	}
}

func TestDoctorDependencyProblems(t *testing.T) {
	e := seeded(t)
	if _, err := e.b.Block(e.ctx, LeaseRequest{Mutation: m, ID: "A", Reason: "vendor"}); err != nil {
		t.Fatal(err)
	}
	rep, _ := Diagnose(e.dir, e.clk.Now())
	if len(rep.DependencyProblems) != 1 || !strings.Contains(rep.DependencyProblems[0], "B waits on A, which is blocked: vendor") {
		t.Fatalf("problems = %q", rep.DependencyProblems)
	}
}
