//go:build !bl_stalelock

package lock

// staleForTesting is true only in binaries built with -tags bl_stalelock,
// which the proof harness uses to show that its lock-file churn test
// catches a lock kept on a deleted or replaced lock file. Release builds
// always check.
const staleForTesting = false
