//go:build !unix

package lock

// lockDirectory: LockFileEx does not lock a directory handle, so here the
// lock file is the only lock, checked against the path after each grant.
const lockDirectory = false
