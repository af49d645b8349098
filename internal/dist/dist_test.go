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

// TestCrossBuild compiles every package for the release platforms, so a
// platform never breaks unnoticed (Windows has no Pdeathsig and locks with
// LockFileEx; darwin has no /proc). Each operating system once, and arm64
// once: the code differs by system, not by processor, so the six of make
// dist add nothing but time. Compiling only, no linking; after the first
// run the build cache makes it cheap.
func TestCrossBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the module six times")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	for _, tg := range []struct{ OS, Arch string }{{"windows", "amd64"}, {"darwin", "arm64"}, {"linux", "arm64"}} {
		t.Run(tg.OS+"-"+tg.Arch, func(t *testing.T) {
			cmd := exec.Command("go", "build", "./...")
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "GOOS="+tg.OS, "GOARCH="+tg.Arch, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=%s GOARCH=%s go build ./...: %v\n%s", tg.OS, tg.Arch, err, strings.TrimSpace(string(out)))
			}
		})
	}
	// The tests' own files build too (vet type-checks them), on Windows,
	// where the most differs.
	cmd := exec.Command("go", "vet", "./lock/...", "./internal/cli/...", "./ledger/...")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("GOOS=windows go vet: %v\n%s", err, out)
	}
}
