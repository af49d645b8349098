//go:build bl_stalelock

package lock

// This build locks the lock file as it opened it and nothing else: no
// directory lock, no check that the file is still at its path. A holder
// whose lock file is deleted or replaced keeps a lock nobody else will
// open. It exists only so the proof harness can show that its lock-file
// tests catch that; never ship it.
const staleForTesting = true
