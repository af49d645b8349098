package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The start-up budget of the lean bl, in what does not depend on the
// machine: how many packages run an initialiser and how many allocations
// they make before main. Every call pays for them, however little the
// command does. Before the budget, the importer's regexps and the CRC-32C
// table were built at load, 521 allocations. A new package-level table or
// regexp belongs in a sync.OnceValue; raise a figure here only for code
// that every command needs. 68: crypto/sha1 (no allocations), as git
// names a blob by it and any command may meet damage git wrote into the
// ledger (ledger/internal/store/quarantine_git.go); and the store's split
// out of ledger, one more package with the sentinels ledger initialised
// before. 69: compress/flate (7 allocations, 0.02 ms), as bl diff reads
// git's objects in process instead of starting git cat-file (gitdir.Store).
const (
	initPackagesBudget = 69
	initAllocsBudget   = 330
)

var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, [0-9.]+ ms clock, ([0-9]+) bytes, ([0-9]+) allocs$`)

// TestStartupBudget builds bl as make build does and reads the Go
// runtime's trace of its initialisers (GODEBUG=inittrace=1).
func TestStartupBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bl")
	}
	bin := filepath.Join(t.TempDir(), "bl")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bl version: %v\n%s", err, out)
	}
	pkgs, allocs := 0, 0
	var heavy []string
	for _, l := range strings.Split(string(out), "\n") {
		m := initLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		pkgs++
		allocs += n
		if n >= 50 {
			heavy = append(heavy, m[1]+" "+m[3])
		}
	}
	if pkgs == 0 {
		t.Fatalf("no init trace in bl version's output:\n%s", out)
	}
	t.Logf("%d packages initialise, %d allocations; the largest: %v", pkgs, allocs, heavy)
	if pkgs > initPackagesBudget {
		t.Errorf("%d packages run an initialiser at bl's start-up, budget %d", pkgs, initPackagesBudget)
	}
	if allocs > initAllocsBudget {
		t.Errorf("bl's initialisers make %d allocations, budget %d; the largest: %v", allocs, initAllocsBudget, heavy)
	}
}

// TestStaticBuild: make build turns cgo off. With it, kong's os/user makes
// bl a dynamic binary that loads libc and starts cgo's threads on every
// call, which cost more than the floor itself.
func TestStaticBuild(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "-o $(BIN) ./cmd/bl") {
		t.Fatal("the Makefile builds bl some other way: update this test")
	}
	for _, l := range strings.Split(string(mk), "\n") {
		if strings.Contains(l, "$(GO) build") && strings.Contains(l, "-o $(BIN") { // the binaries make build installs
			if !strings.Contains(l, "CGO_ENABLED=0") {
				t.Errorf("Makefile builds with cgo: %s", strings.TrimSpace(l))
			}
		}
	}
}
