//go:build bl_brokenlock

package lock

// This build skips locking entirely. It exists only so the race harness can
// prove its checker detects double claims; never ship it.
const brokenForTesting = true
