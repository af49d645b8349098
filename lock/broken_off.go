//go:build !bl_brokenlock

package lock

// brokenForTesting is true only in binaries built with -tags bl_brokenlock,
// which the race harness uses to show that its checker catches the double
// claims a missing lock allows. Release builds always lock.
const brokenForTesting = false
