//go:build unix && !linux

package cli

// peerIsMe: elsewhere the socket's owner and its directory (0700, this
// user's) are what dialDaemon checks.
func peerIsMe(int) (pid int, ok bool) { return 0, true }

// daemonStopped: elsewhere a stopped daemon is not seen.
func daemonStopped(int) bool { return false }
