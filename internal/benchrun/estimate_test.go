//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func walls(ms ...int) []sample {
	ss := make([]sample, len(ms))
	for i, m := range ms {
		ss[i].wall = time.Duration(m) * time.Millisecond
	}
	return ss
}

// TestRoundRatios: each round's call is set against the floor of the same
// round, not against the floors' median. A floor that ran slow in one
// round moves that round's ratio only.
func TestRoundRatios(t *testing.T) {
	floors := walls(2, 2, 8, 2, 2)
	bls := walls(4, 4, 8, 4, 6)
	q1, med, q3 := roundRatios(bls, floors)
	if q1 != 2 || med != 2 || q3 != 2 {
		t.Errorf("quartiles %.2f %.2f %.2f, want 2 2 2 (rounds 2 2 1 2 3)", q1, med, q3)
	}
	if q1, med, q3 := roundRatios(nil, nil); q1 != 0 || med != 0 || q3 != 0 {
		t.Errorf("no rounds: %v %v %v", q1, med, q3)
	}
}

// TestPooledFloor: the pooled floor is the median of every floor call of
// every row, so one row's slow floors do not become its denominator.
func TestPooledFloor(t *testing.T) {
	rows := []pairedRow{{floors: walls(2, 2, 2, 2)}, {floors: walls(9, 9)}, {floors: walls(3)}}
	if got := pooledFloor(rows); got != 2*time.Millisecond {
		t.Errorf("pooled floor %v, want 2ms", got)
	}
	if pooledCount(rows) != 7 {
		t.Errorf("pooled count %d, want 7", pooledCount(rows))
	}
}

// TestInstalledCopy: the binaries are timed as copies with the same bytes
// and mode, bl-git beside bl.
func TestInstalledCopy(t *testing.T) {
	src := t.TempDir()
	for name, body := range map[string]string{"bl": "bl bytes", "bl-git": "bl-git bytes"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "installed")
	got := installed(filepath.Join(src, "bl"), dst, true)
	for name, body := range map[string]string{got: "bl bytes", filepath.Join(dst, "bl-git"): "bl-git bytes"} {
		b, err := os.ReadFile(name)
		if err != nil || string(b) != body {
			t.Errorf("%s: %q, %v; want %q", name, b, err, body)
		}
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, %v", name, fi.Mode(), err)
		}
	}
}

// TestAgreement: a row is met or not only when every reading says so.
func TestAgreement(t *testing.T) {
	for _, c := range []struct {
		readings []float64
		want     string
	}{
		{[]float64{1.9, 1.95, 2.0}, "met"},
		{[]float64{2.1, 2.2, 2.01}, "NOT MET"},
		{[]float64{1.98, 2.16, 1.94}, "undecided"},
	} {
		if got := agreement(2, c.readings...); got != c.want {
			t.Errorf("agreement(2, %v) = %s, want %s", c.readings, got, c.want)
		}
	}
}

// TestLinkFloorIsStatic: the linked floor is built as bl is, without cgo;
// with it, the floor read 1.9× the plain one, libc's start included.
func TestLinkFloorIsStatic(t *testing.T) {
	cmd := linkFloorBuild(filepath.Join(t.TempDir(), "linkfloor"))
	// The last setting of a variable in Env is the one the build sees.
	if len(cmd.Env) == 0 || cmd.Env[len(cmd.Env)-1] != "CGO_ENABLED=0" {
		t.Errorf("the linked floor is built with cgo left to the environment: %v", cmd.Env)
	}
}
