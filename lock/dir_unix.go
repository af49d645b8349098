//go:build unix

package lock

// lockDirectory: flock(2) locks a directory's descriptor as it does a file's.
const lockDirectory = true
