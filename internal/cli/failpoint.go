//go:build bl_failpoints

package cli

import (
	"os"
	"syscall"
)

// In binaries built with -tags bl_failpoints, BL_FAILPOINT names an append
// stage (before-write, after-write, after-fsync) at which the process kills
// itself with SIGKILL, so crash tests can stop a writer exactly there.
func init() {
	stage := os.Getenv("BL_FAILPOINT")
	if stage == "" {
		return
	}
	failpoint = func(at string) {
		if at == stage {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
