//go:build !linux

package cli_test

import "github.com/rogpeppe/go-internal/testscript"

// procLocksID: only Linux has /proc/locks.
func procLocksID(*testscript.TestScript, string) (string, bool) { return "", false }
