// Package testbin builds the module's commands (cmd/bl, cmd/bl-git) for
// the tests that run them as real processes: once per configuration for a
// whole go test run, shared by every package's test binary.
//
// The binaries go in a directory under os.TempDir() named after the
// module's root and the configuration (race detector, build tags, GOFLAGS,
// cgo). A file lock there lets one package build at a time; the others then
// find the binaries up to date, which go build checks from the file's build
// ID without linking again. A source edit makes go build link anew, and it
// replaces the file by a rename, so a process already running keeps its
// binary.
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gofrs/flock"
)

// Race reports whether this test binary runs under the race detector
// (go test -race): a test that wants its processes checked as well asks
// for Config{Race: testbin.Race}.
const Race = raceEnabled

// Config says how the commands are built.
type Config struct {
	Race bool   // go build -race
	Tags string // go build -tags, comma-separated
}

type result struct {
	once sync.Once
	dir  string
	err  error
}

var built sync.Map // Config and names -> *result

// Dir returns the directory holding the named commands (cmd/<name>) as c
// says to build them, built at most once per test binary.
func Dir(c Config, names ...string) (string, error) {
	v, _ := built.LoadOrStore(fmt.Sprint(c, names), &result{})
	r := v.(*result)
	r.once.Do(func() { r.dir, r.err = build(c, names) })
	return r.dir, r.err
}

// Path returns the path of one command built as c says; the test fails
// when it does not build.
func Path(t testing.TB, c Config, name string) string {
	t.Helper()
	dir, err := Dir(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, exe(name))
}

func build(c Config, names []string) (string, error) {
	mod, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(mod)))
	key := sha256.Sum256([]byte(strings.Join([]string{root, strconv.FormatBool(c.Race), c.Tags,
		os.Getenv("GOFLAGS"), os.Getenv("CGO_ENABLED"), os.Getenv("GOEXPERIMENT")}, "\x00")))
	dir := filepath.Join(os.TempDir(), "bl-testbin-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(key[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lk := flock.New(filepath.Join(dir, ".lock"))
	if err := lk.Lock(); err != nil {
		return "", fmt.Errorf("lock %s: %v", dir, err)
	}
	defer lk.Unlock()
	// -buildvcs=false: the version a test sees is "dev", as in a test
	// binary, whatever state the work tree is in.
	args := []string{"build", "-buildvcs=false", "-o", dir + string(filepath.Separator)}
	if c.Race {
		args = append(args, "-race")
	}
	if c.Tags != "" {
		args = append(args, "-tags", c.Tags)
	}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir, nil
}

// goTool is the go command: go test puts its own first on PATH.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go" // not on PATH: let exec report it
}

func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}
