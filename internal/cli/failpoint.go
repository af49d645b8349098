//go:build bl_failpoints

package cli

import (
	"os"
	"syscall"
)

// In binaries built with -tags bl_failpoints, BL_FAILPOINT names an append
// stage (before-write, after-write, after-fsync) or a compaction step at
// which the process kills itself with SIGKILL, so crash tests can stop a
// writer exactly there. With BL_FAILPOINT_ACTION=stop it stops itself with
// SIGSTOP instead, and goes on from there when sent SIGCONT: a test can
// park several writers at one stage and let them go together.
func failpointFrom(getenv func(string) string) func(stage string) {
	stage := getenv("BL_FAILPOINT")
	if stage == "" {
		return nil
	}
	stop := getenv("BL_FAILPOINT_ACTION") == "stop"
	return func(at string) {
		switch {
		case at != stage:
		case stop:
			// Sent to this thread, the stop takes it before the
			// syscall returns; sent to the process, another thread
			// could take it while this one goes on to write.
			_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
		default:
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
