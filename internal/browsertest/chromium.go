// Package browsertest finds a browser for the tests that drive a real one
// (the html export and the live board).
package browsertest

import (
	"os/exec"
	"testing"
)

// Chromium finds an installed chromium, else skips the test saying how to
// install it. Tests install nothing: .ci/run does (apt-get install
// chromium).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed: the browser tests are skipped (.ci/run installs it: apt-get install chromium)")
	return ""
}
