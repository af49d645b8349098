//go:build unix && !linux

package cli

// peerIsMe: elsewhere the socket's owner and its directory (0700, this
// user's) are what dialDaemon checks.
func peerIsMe(int) bool { return true }
