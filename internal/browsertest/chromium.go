// Package browsertest finds a browser for the tests that drive a real one
// (the html export and the live board).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Chromium finds Debian's chromium, installing it with apt-get when it is
// missing and that is possible, else skips the test with the reason.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("chromium is not installed and cannot be (needs root and apt-get): apt-get install -y chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := func() ([]byte, error) {
		cmd := exec.CommandContext(ctx, apt, "install", "-y", "--no-install-recommends", "chromium")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	if _, err := install(); err != nil {
		// The package lists may be missing or stale.
		if upd, uerr := exec.CommandContext(ctx, apt, "update").CombinedOutput(); uerr != nil {
			t.Skipf("chromium is not installed and apt-get update failed: %v\n%s", uerr, upd)
		}
		if out, err := install(); err != nil {
			t.Skipf("chromium is not installed and apt-get install failed: %v\n%s", err, out)
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("apt-get installed chromium but it is not on PATH: %v", err)
	}
	return p
}
