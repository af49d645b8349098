package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestArchivesReproducible: the same files give the same archive bytes,
// whatever order they come in and whenever they are written.
func TestArchivesReproducible(t *testing.T) {
	stamp := time.Unix(1700000000, 0).UTC()
	a := []File{{"x/bl", 0o755, []byte("binary")}, {"x/README.md", 0o644, []byte("read me")}}
	b := []File{a[1], a[0]}
	for name, write := range map[string]func(*bytes.Buffer, []File) error{
		"tar.gz": func(w *bytes.Buffer, f []File) error { return TarGz(w, f, stamp) },
		"zip":    func(w *bytes.Buffer, f []File) error { return Zip(w, f, stamp) },
	} {
		var one, two bytes.Buffer
		if err := write(&one, a); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // a clock in the archive would show
		if err := write(&two, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one.Bytes(), two.Bytes()) {
			t.Errorf("%s: two writes of the same files differ", name)
		}
	}
}

// TestCrossBuild type-checks, tests included, the packages that hold
// platform-specific code (files with build constraints: the lock, the
// ledger's file system calls, the supervisor's process handling, the
// hand-over to bl-git, hooks) and the lean bl, for Windows and macOS, so a
// platform never breaks unnoticed (Windows has no Pdeathsig, no signals
// to process groups, and locks with LockFileEx). The rest of the module is
// the same code everywhere; make dist builds all of it for the six
// targets. It compiles most of the module twice more (minutes on a cold
// cache and two cores), so it runs with BL_STRESS set: make stress and
// .ci/run.
func TestCrossBuild(t *testing.T) {
	if os.Getenv("BL_STRESS") == "" {
		t.Skip("set BL_STRESS=1 to cross-compile the platform-specific packages for windows and darwin")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	pkgs := []string{"./lock", "./ledger", "./hooks", "./internal/supervisor", "./internal/cli", "./cmd/bl"}
	for _, tg := range []struct{ OS, Arch string }{{"windows", "amd64"}, {"darwin", "arm64"}} {
		t.Run(tg.OS+"-"+tg.Arch, func(t *testing.T) {
			cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "GOOS="+tg.OS, "GOARCH="+tg.Arch, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=%s GOARCH=%s go vet: %v\n%s", tg.OS, tg.Arch, err, strings.TrimSpace(string(out)))
			}
		})
	}
}
